package errclass

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// The error class is the one piece of a sink's error that the stall
// provenance carries into the Kafka offset-commit metadata, which anyone who
// can describe the consumer group can read. An error's message routinely
// carries what must not go there: a URL with its userinfo and query string,
// an Authorization header, a connection string with its password, a request
// body echoed back with an API key. So the class is built from what is known
// safe, never by deleting what looks unsafe: every byte of it comes from one
// of
//
//   - the Go type name of an error in the chain (code, not data);
//   - an HTTP status read through a typed accessor, as "status=NNN";
//   - a token of the message that passes the allowlist below;
//   - the separators ": " and " ", and the marker droppedMarker that stands
//     for one or more tokens left out.
//
// A token is a run of bytes between ASCII whitespace. Up to two of the
// characters ( ) [ ] , ; : . " ' are set aside at each end of it (two, so
// that Benthos's "(503):" reads as a number), and it is kept, with them,
// only if what remains is
//
//   - a word of 1 to maxWord ASCII letters that is plausibly English: all
//     lowercase ("refused"), Capitalized ("Service"), or ALL CAPS of at most
//     maxCaps letters ("HTTP", "EOF", "TLS");
//   - a hyphenated word: 2 to maxParts such words joined by single '-', at
//     most maxWord bytes in all, hyphens included ("read-only",
//     "out-of-range", "watermark-demo", "Content-Type");
//   - a number of 1 to maxDigits ASCII digits (a status code, a count);
//   - a range: two such numbers joined by one '-' ("1200-1209");
//   - a topic and partition: a word or hyphenated word, one '/', and a
//     number ("orders/3", "watermark-demo/3"), with nothing before the word;
//   - nothing at all (the token was only such punctuation, like ":");
//
// or if the whole token is one of a few fixed separators ("-", "|", "->").
// Anything else is dropped: a token with '@', '=', '?', '&', '%', '_', an
// inner ':' or '.', a '/' anywhere but between the word and the number of a
// topic and partition (URLs and paths, "/v1/keys/3", "a/b/3", "orders/3x"),
// a '-' anywhere but between two words or two numbers ("-x", "a--b",
// "x-1", "1-2-3"), letters mixed with digits in any part (API keys like
// "sk-live-4f3a", hex and base64 blobs, JWTs, identifiers), any non-ASCII
// byte, more than maxWord letters or maxDigits digits, more than maxParts
// hyphenated parts, and mixed case other than Capitalized ("aBcDeF",
// "eyJhbGciOi"; this drops CamelCase codes like "AccessDenied" too, as the
// price of dropping random-looking strings).
//
// A word of letters can still be a password ("hunter"), a hyphenated word a
// short passphrase ("red-fox-jumps", the shape of some generators' default),
// and a short number or range a PIN: that risk is accepted only for these
// English-shaped tokens, bounded as above (a hyphenated word has no more
// room than a single word, maxWord bytes, which a random lowercase word
// already had; four words like "correct-horse-battery-staple" are dropped),
// and is narrowed further by context: the token after a credential keyword written
// as a label ("password:", "token:", "Authorization:", or a hyphenated label
// whose last part is one, like "X-Api-Key:") or after an HTTP auth scheme
// ("Bearer", "Basic", "Digest") is dropped whatever its shape, and so is the
// one after that when the dropped token is itself such a keyword
// ("Authorization: Bearer x").
//
// Each run of dropped tokens reads as one droppedMarker, "[redacted]": a
// word any reader takes for "something was left out here on purpose", where
// a bare "[x]" read as a bug. It costs 7 bytes more than "[x]" per run, out
// of maxErrorClass; a message rarely has more than two or three runs.

const (
	// maxErrorClass bounds the error class, in bytes.
	maxErrorClass = 120
	// droppedMarker stands for a run of one or more tokens left out.
	droppedMarker = "[redacted]"

	maxWord     = 20 // letters in a kept word; bytes in a kept hyphenated word
	maxParts    = 3  // words in a kept hyphenated word
	maxCaps     = 6  // letters in a kept ALL-CAPS word
	maxDigits   = 6  // digits in a kept number
	maxTypeTag  = 64 // bytes of the type tag; a longer type name is left out
	maxEdge     = 2  // punctuation characters set aside at each end of a token
	maxChainLen = 32 // errors of a chain looked at; bounds an Unwrap cycle
)

// genericErrTypes are the standard library's anonymous carriers of a
// message, which say nothing of what failed: they never give the type tag.
var genericErrTypes = func() [4]reflect.Type {
	e := errors.New("e")
	return [4]reflect.Type{
		reflect.TypeOf(e),
		reflect.TypeOf(fmt.Errorf("%w", e)),
		reflect.TypeOf(fmt.Errorf("%w%w", e, e)),
		reflect.TypeOf(errors.Join(e, e)),
	}
}()

// Class returns a short, safe description of err for the stall
// provenance: at most maxErrorClass bytes of printable ASCII (0x20-0x7E),
// never containing a secret that err's message may carry (URL userinfo,
// query strings, bearer tokens, API keys, passwords, base64 and hex blobs,
// JWTs, email addresses...). See the rules above; in short:
//
//	[type tag][ status=NNN]: token token [redacted] token ...
//
// The type tag is the type name, without its leading '*' and any type
// arguments, of the innermost error in err's chain (following Unwrap() error,
// and the first error of Unwrap() []error) that is not a plain errors.New,
// fmt.Errorf or errors.Join error: "net.OpError", "syscall.Errno". The
// status is the first HTTP status (100-599) found in the chain through a
// StatusCode() int or HTTPStatusCode() int method or an int field named Code
// or StatusCode. The message is err.Error(), rebuilt token by token from the
// allowlist, each run of dropped tokens collapsed into one droppedMarker,
// and cut after the last whole token that fits.
//
// Class is deterministic and allocates nothing but the result. It
// never panics: a nil err gives "", and an error whose methods panic gives
// what was known safe before the panic (its type tag, or droppedMarker).
func Class(err error) (class string) {
	if err == nil {
		return ""
	}
	tag := ""
	defer func() {
		if recover() != nil {
			class = droppedMarker
			if tag != "" {
				class = tag
			}
		}
	}()
	status := 0
	for e, n := err, 0; e != nil && n < maxChainLen; n++ {
		if t := typeTag(e); t != "" {
			tag = t // the innermost one wins
		}
		if status == 0 {
			status = httpStatus(e)
		}
		switch u := e.(type) { //nolint:errorlint // one link at a time: the walk is the chain
		case interface{ Unwrap() error }:
			e = u.Unwrap()
		case interface{ Unwrap() []error }:
			e = nil
			if es := u.Unwrap(); len(es) > 0 {
				e = es[0]
			}
		default:
			e = nil
		}
	}
	msg := err.Error()

	var b strings.Builder
	b.Grow(maxErrorClass)
	b.WriteString(tag)
	if status != 0 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("status=")
		b.WriteByte(byte('0' + status/100))
		b.WriteByte(byte('0' + status/10%10))
		b.WriteByte(byte('0' + status%10))
	}
	sep := ""
	if b.Len() > 0 {
		sep = ": "
	}
	dropped := false // the last piece written is droppedMarker
	dropNext := false
	for i := 0; i < len(msg); {
		for i < len(msg) && isSpace(msg[i]) {
			i++
		}
		j := i
		for j < len(msg) && !isSpace(msg[j]) {
			j++
		}
		if i == j {
			break
		}
		tok := msg[i:j]
		i = j

		core, ok := safeToken(tok)
		keep := ok && !dropNext
		dropNext = ok && isCredentialLabel(tok, core)
		piece := tok
		if !keep {
			if dropped {
				continue
			}
			piece = droppedMarker
		}
		if b.Len()+len(sep)+len(piece) > maxErrorClass {
			break
		}
		b.WriteString(sep)
		b.WriteString(piece)
		sep, dropped = " ", !keep
	}
	return b.String()
}

// typeTag returns the type name of e for the tag, or "" when e is one of
// genericErrTypes or its type has no plain name of a safe length.
func typeTag(e error) string {
	t := reflect.TypeOf(e)
	for _, g := range genericErrTypes {
		if t == g {
			return ""
		}
	}
	name := strings.TrimLeft(t.String(), "*")
	if k := strings.IndexByte(name, '['); k >= 0 {
		name = name[:k] // a generic type's arguments may be long
	}
	if name == "" || len(name) > maxTypeTag {
		return ""
	}
	for k := 0; k < len(name); k++ {
		if c := name[k]; !isLetter(c) && !isDigit(c) && c != '_' && c != '.' {
			return "" // an unnamed type, or a name that is not ASCII
		}
	}
	return name
}

// httpStatus returns the HTTP status e carries through a typed accessor, or
// 0. A panicking accessor counts as none.
func httpStatus(e error) (status int) {
	defer func() {
		if recover() != nil {
			status = 0
		}
	}()
	code := -1
	switch s := e.(type) { //nolint:errorlint // this link only: Class walks the chain
	case interface{ StatusCode() int }:
		code = s.StatusCode()
	case interface{ HTTPStatusCode() int }:
		code = s.HTTPStatusCode()
	default:
		v := reflect.ValueOf(e)
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return 0
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return 0
		}
		t := v.Type()
		for k := 0; k < t.NumField(); k++ {
			f := t.Field(k)
			if (f.Name == "Code" || f.Name == "StatusCode") && f.Type.Kind() == reflect.Int {
				code = int(v.Field(k).Int())
				break
			}
		}
	}
	if code < 100 || code > 599 {
		return 0
	}
	return code
}

// safeToken reports whether tok passes the allowlist, and returns its core:
// tok without the punctuation set aside at its ends.
func safeToken(tok string) (core string, ok bool) {
	switch tok {
	case "-", "--", "|", "->", "=>", "&", "+":
		return tok, true
	}
	core = tok
	for k := 0; k < maxEdge && core != "" && isEdgePunct(core[0]); k++ {
		core = core[1:]
	}
	for k := 0; k < maxEdge && core != "" && isEdgePunct(core[len(core)-1]); k++ {
		core = core[:len(core)-1]
	}
	return core, core == "" || isWord(core) || isNumber(core) ||
		isHyphenated(core) || isRange(core) || isTopicPartition(core)
}

// isWord reports whether s is a plausibly English word: 1 to maxWord ASCII
// letters, all lowercase, or Capitalized, or ALL CAPS of at most maxCaps.
func isWord(s string) bool {
	if s == "" || len(s) > maxWord {
		return false
	}
	upper := 0
	for k := 0; k < len(s); k++ {
		switch c := s[k]; {
		case 'A' <= c && c <= 'Z':
			upper++
		case 'a' <= c && c <= 'z':
		default:
			return false
		}
	}
	switch {
	case upper == 0:
		return true // lowercase
	case upper == 1 && 'A' <= s[0] && s[0] <= 'Z':
		return true // Capitalized
	default:
		return upper == len(s) && len(s) <= maxCaps // ALL CAPS
	}
}

// isHyphenated reports whether s is 2 to maxParts words (isWord) joined by
// single '-', at most maxWord bytes in all.
func isHyphenated(s string) bool {
	if len(s) > maxWord {
		return false
	}
	parts := 0
	for {
		k := strings.IndexByte(s, '-')
		if k < 0 {
			return parts > 0 && parts < maxParts && isWord(s)
		}
		if !isWord(s[:k]) {
			return false
		}
		s, parts = s[k+1:], parts+1
	}
}

// isRange reports whether s is two numbers (isNumber) joined by one '-'.
func isRange(s string) bool {
	k := strings.IndexByte(s, '-')
	return k >= 0 && isNumber(s[:k]) && isNumber(s[k+1:])
}

// isTopicPartition reports whether s is a word or hyphenated word, one '/',
// and a number: a topic and partition, "orders/3".
func isTopicPartition(s string) bool {
	k := strings.IndexByte(s, '/')
	return k >= 0 && (isWord(s[:k]) || isHyphenated(s[:k])) && isNumber(s[k+1:])
}

// isNumber reports whether s is 1 to maxDigits ASCII digits.
func isNumber(s string) bool {
	if s == "" || len(s) > maxDigits {
		return false
	}
	for k := 0; k < len(s); k++ {
		if !isDigit(s[k]) {
			return false
		}
	}
	return true
}

// isCredentialLabel reports whether the token after tok (whose core is
// core, a kept token) is to be dropped whatever its shape: tok is a
// credential keyword written as a label ("password:", "token:"), or a
// hyphenated label whose last part is one ("X-Api-Key:", "Set-Cookie:"), or
// an HTTP auth scheme.
func isCredentialLabel(tok, core string) bool {
	for _, w := range [...]string{"bearer", "basic", "digest"} {
		if strings.EqualFold(core, w) {
			return true
		}
	}
	if !strings.HasSuffix(tok, ":") {
		return false
	}
	if k := strings.LastIndexByte(core, '-'); k >= 0 && isHyphenated(core) {
		core = core[k+1:]
	}
	for _, w := range [...]string{
		"password", "passwd", "pass", "pwd", "passphrase", "secret", "token",
		"apikey", "key", "auth", "authorization", "credential", "credentials",
		"cookie", "session", "signature", "sig", "otp", "pin",
	} {
		if strings.EqualFold(core, w) {
			return true
		}
	}
	return false
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isEdgePunct(c byte) bool {
	return strings.IndexByte(`()[],;:."'`, c) >= 0
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
