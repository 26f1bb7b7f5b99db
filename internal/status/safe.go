package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// What the commands print comes partly from others: group and topic names,
// commit metadata and the dead-letter headers any client may write. A
// terminal acts on some runes instead of showing them: a C1 control (U+009B
// is CSI, which starts an escape sequence as ESC [ does) or a bidi override
// (U+202E turns the rest of the line around: "Trojan Source",
// CVE-2021-42574). encoding/json escapes C0 controls and U+2028/U+2029 only,
// so both outputs escape these runes themselves, as \u009b, \u202e.

// unsafeRune reports whether r must not reach a terminal raw: DEL, a C1
// control, or a bidi control (ALM, LRM, RLM, the embeddings and overrides
// U+202A-U+202E, the isolates U+2066-U+2069). C0 controls are the caller's
// (JSON escapes them; text escapes them too, see TextSafe).
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// EscapeJSON returns the JSON text b, as encoding/json wrote it, with every
// unsafeRune written as a \u escape. Such runes can stand only inside
// string literals (the rest of a JSON text is ASCII), where the escape
// means the same rune: the document reads back the same.
func EscapeJSON(b []byte) []byte {
	if !bytes.ContainsFunc(b, unsafeRune) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if unsafeRune(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// EncodeJSON writes v as one JSON document, indented by two spaces, with a
// final newline and every unsafeRune escaped: the JSON output of the
// commands.
func EncodeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(EscapeJSON(b.Bytes()))
	return err
}

// TextSafe returns s for a line of text output: every control (C0 included:
// a newline or a tab in a name would break the table), every unsafeRune and
// every byte that is not UTF-8 written as an escape (\u009b, \x9b), the rest
// as it is.
func TextSafe(s string) string {
	clean := true
	for _, r := range s {
		if r < 0x20 || unsafeRune(r) || r == utf8.RuneError {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r < 0x20 || unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// RFC 3339 has four-digit years: Go formats the year 10000 and later with
// more digits, which RFC 3339 parsers refuse. A time from commit metadata
// or a record header can be that far (a hostile or broken writer), so the
// commands clamp it to the last instant RFC 3339 can write.
var maxRFC3339 = time.Date(9999, time.December, 31, 23, 59, 59, 999999999, time.UTC)

// FormatTime formats t in UTC with layout, an RFC 3339 layout: a time past
// the year 9999 is written as the last instant of 9999, one before the
// year 0 as its first, so that the result always parses as RFC 3339.
func FormatTime(t time.Time, layout string) string {
	t = t.UTC()
	switch {
	case t.After(maxRFC3339):
		t = maxRFC3339
	case t.Year() < 0:
		t = time.Date(0, time.January, 1, 0, 0, 0, 0, time.UTC)
	}
	return t.Format(layout)
}
