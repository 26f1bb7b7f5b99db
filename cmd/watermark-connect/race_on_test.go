//go:build race

package main

// raceBuild is true when the tests run with -race: the binary under test is
// then built with -race too, which reuses the packages the test build already
// compiled and checks the binary for races as well.
const raceBuild = true
