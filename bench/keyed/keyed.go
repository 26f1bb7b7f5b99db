// Package keyed is what the key-ordering benchmark's programs share: the
// keyed topic (Fill: records over a fixed number of keys, each value naming
// its key) and the check of key order at the sink (Check). bench/keyfill and
// bench/keysink are its command-line faces; bench/e2e's keyorder section
// uses it in process.
//
// A value is its key, a space, then hex padding ("k42 3fa0..."), so a sink
// that sees only the rendered record (topic, partition, offset, value) knows
// its key (KeyOf), whatever contender posted it.
package keyed

import "strings"

// KeyOf is the key a record's value names.
func KeyOf(v string) string {
	if i := strings.IndexByte(v, ' '); i >= 0 {
		return v[:i]
	}
	return v
}
