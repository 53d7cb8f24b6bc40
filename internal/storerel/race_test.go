//go:build race

package storerel

const raceEnabled = true
