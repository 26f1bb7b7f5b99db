// Command hello is what build_test.go builds: a main package with no
// imports outside the standard library, quick to compile.
package main

import "fmt"

var greeting = "unset"

func main() { fmt.Println(greeting) }
