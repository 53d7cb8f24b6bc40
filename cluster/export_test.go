package cluster

// Score is the rendezvous hash, for tests that predict placement.
var Score = score
