package remote

import "sync"

// exportTable is a node's exported ports by name. add and remove change
// one entry, O(1) amortized, however many ports are exported (a copy-on-
// write map would copy them all on each change); lookup is one map access
// under a read lock, without allocating. The zero value is an empty table.
type exportTable struct {
	// mu pairs the writers, add and remove (Export and Unexport, from any
	// goroutine), with the readers, lookup (the node's subscription
	// goroutine, once per record received). Invariant: m is written only
	// with mu held for writing and read only with mu held for reading, so
	// a lookup sees the table before or after a change, never during one.
	// Read sections hold mu for one map access and nothing else (never a
	// delivery), so a writer waits for at most one lookup, and the reader
	// for at most one insert or delete. Lock order: Export takes mu inside
	// Node.mu; nothing takes Node.mu while holding mu.
	mu sync.RWMutex
	m  map[string]*export
}

// lookup returns the export under name, or nil if there is none.
func (t *exportTable) lookup(name []byte) *export {
	t.mu.RLock()
	ex := t.m[string(name)] // no allocation: the conversion is only a key
	t.mu.RUnlock()
	return ex
}

// add exports ex under name; it reports false, changing nothing, if the
// name is already exported.
func (t *exportTable) add(name string, ex *export) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.m[name]; ok {
		return false
	}
	if t.m == nil {
		t.m = make(map[string]*export)
	}
	t.m[name] = ex
	return true
}

// remove withdraws the export under name; it reports false if there was
// none.
func (t *exportTable) remove(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.m[name]; !ok {
		return false
	}
	delete(t.m, name)
	return true
}
