package executor

import "reflect"

// noteDead records the type of msg, a message just counted as a dead
// letter (WorkerStats.DeadLetters), if no dead letter's type is recorded
// yet, so that Stop can name one in its ErrUndelivered error. Called off
// the delivery path, by the worker that counts the dead letter.
func (e *Executor) noteDead(msg any) {
	if msg == any(stopPill) {
		e.stopPillsDead.Add(1) // Shutdown's, not the program's: see stopPill
		return
	}
	if msg == nil || e.deadType.Load() != nil {
		return
	}
	e.deadType.CompareAndSwap(nil, reflect.TypeOf(msg))
}

// deadLetterType returns the name of the type noteDead recorded ("" if
// none): "*pkg.T".
func (e *Executor) deadLetterType() string {
	if t, ok := e.deadType.Load().(reflect.Type); ok {
		return t.String()
	}
	return ""
}
