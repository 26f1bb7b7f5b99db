package status

import (
	"bytes"
	"encoding/json"
	"strings"
)

// ScrubJSON is Scrub for a JSON document: it replaces the secrets inside
// its string literals only, written as encoding/json writes them (with and
// without its HTML escapes), so the document stays valid JSON. Scrub over
// JSON turned `"healthy": true` into `"healthy": !!!SECRET_SCRUBBED!!!`
// for the password "true": invalid, and telling the password.
func ScrubJSON(s string, secrets []string) string {
	var forms []string
	for _, secret := range secrets {
		if len(secret) < 4 {
			continue
		}
		forms = append(forms, jsonForm(secret, true), jsonForm(secret, false))
	}
	if len(forms) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] != '"' {
			b.WriteByte(s[i])
			i++
			continue
		}
		end := stringEnd(s, i)
		lit := s[i+1 : end]
		for _, f := range forms {
			lit = strings.ReplaceAll(lit, f, scrubbed)
		}
		b.WriteByte('"')
		b.WriteString(lit)
		if end < len(s) {
			b.WriteByte('"')
		}
		i = end + 1
	}
	return b.String()
}

// stringEnd returns the index of the quote that closes the JSON string
// literal opening at s[open], or len(s) when it is not closed.
func stringEnd(s string, open int) int {
	for i := open + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(s)
}

// jsonForm returns secret as it stands inside a JSON string literal that
// EncodeJSON wrote, with or without HTML escaping.
func jsonForm(secret string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(secret) // a string always encodes
	out := strings.TrimSuffix(string(EscapeJSON(b.Bytes())), "\n")
	return out[1 : len(out)-1]
}
