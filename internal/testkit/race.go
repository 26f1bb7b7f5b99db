//go:build race

package testkit

// RaceEnabled is true when this program was built with -race: a test built
// so builds the binary under test with -race too, which reuses the packages
// the test build already compiled and checks the binary for races as well.
const RaceEnabled = true
