package remote

// Exported for the tests of package remote_test.

// MaxTransientPeers is maxTransientPeers.
const MaxTransientPeers = maxTransientPeers

// PeerCount returns the number of peers the node keeps.
func PeerCount(n *Node) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.peers)
}
