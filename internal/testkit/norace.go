//go:build !race

package testkit

// RaceEnabled is true when this program was built with -race (see race.go).
const RaceEnabled = false
