//go:build race

package stealing

func init() { raceEnabled = true }
