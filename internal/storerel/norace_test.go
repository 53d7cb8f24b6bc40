//go:build !race

package storerel

const raceEnabled = false
