package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ecUnexpectedHTTPRes is Benthos's httpclient.ErrUnexpectedHTTPRes, which its
// http_client output nacks with: a value type with a Code int field.
type ecUnexpectedHTTPRes struct {
	Code int
	S    string
	Body []byte
}

func (e ecUnexpectedHTTPRes) Error() string {
	body := strings.ReplaceAll(string(e.Body), "\n", "")
	return fmt.Sprintf("HTTP request returned unexpected response code (%v): %v, Error: %v", e.Code, e.S, body)
}

// ecStatusError has its status behind a method, like aws-sdk-go's
// awserr.RequestFailure.
type ecStatusError struct {
	status int
	msg    string
}

func (e *ecStatusError) Error() string   { return e.msg }
func (e *ecStatusError) StatusCode() int { return e.status }

// ecPanicError panics in the methods named in its field.
type ecPanicError struct{ in string }

func (e *ecPanicError) Error() string {
	if e.in == "Error" {
		panic("Error")
	}
	return "panicky error"
}

func (e *ecPanicError) Unwrap() error {
	if e.in == "Unwrap" {
		panic("Unwrap")
	}
	return nil
}

func (e *ecPanicError) StatusCode() int {
	if e.in == "StatusCode" {
		panic("StatusCode")
	}
	return 0
}

// ecLoopError unwraps to itself.
type ecLoopError struct{}

func (e *ecLoopError) Error() string { return "loop" }
func (e *ecLoopError) Unwrap() error { return e }

// ecNilDerefError's Error dereferences its receiver, so a typed nil panics.
type ecNilDerefError struct{ msg string }

func (e *ecNilDerefError) Error() string { return e.msg }

// ecDialError is the chain net/http returns when a dial is refused, and
// ecRefused the net.Dial error in it.
func ecDialError(rawURL string) error {
	return &url.Error{Op: "Post", URL: rawURL, Err: ecRefused()}
}

func ecRefused() error {
	return &net.OpError{
		Op:   "dial",
		Net:  "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 443},
		Err:  os.NewSyscallError("connect", syscall.ECONNREFUSED),
	}
}

// assertErrorClassSafe asserts the invariants of every error class: at most
// maxErrorClass bytes, printable ASCII, and no substring of at least minLen
// bytes of any of secrets.
func assertErrorClassSafe(t *testing.T, class string, minLen int, secrets ...string) {
	t.Helper()
	assert.LessOrEqual(t, len(class), maxErrorClass, "%q", class)
	for i := 0; i < len(class); i++ {
		if c := class[i]; c < 0x20 || c > 0x7e {
			assert.Failf(t, "not printable ASCII", "byte %#x at %d of %q", c, i, class)
			break
		}
	}
	for _, s := range secrets {
		for n := minLen; n <= len(s); n++ {
			for i := 0; i+n <= len(s); i++ {
				assert.NotContains(t, class, s[i:i+n], "a piece of the secret %q", s)
			}
		}
	}
}

func TestErrorClassExamples(t *testing.T) {
	jwt := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	for _, tc := range []struct {
		name    string
		err     error
		want    string
		secrets []string // none of them, nor any 4 bytes of them, may show
	}{{
		name: "benthos http_client message",
		err:  errors.New("HTTP request returned unexpected response code (503): 503 Service Unavailable"),
		want: "HTTP request returned unexpected response code (503): 503 Service Unavailable",
	}, {
		name: "benthos http_client error echoing its request",
		err: fmt.Errorf("send: %w", ecUnexpectedHTTPRes{Code: 401, S: "401 Unauthorized",
			Body: []byte(`{"error":"invalid api_key","key":"sk_test_26PHem9AhJZvU623DfE1x4sd"}`)}),
		want:    "plugin.ecUnexpectedHTTPRes status=401: send: HTTP request returned unexpected response code (401): 401 Unauthorized,",
		secrets: []string{"sk_test_26PHem9AhJZvU623DfE1x4sd"},
	}, {
		name:    "refused dial, credentials in the URL",
		err:     ecDialError("https://user:s3cr3t@api.example.com/v1/ingest?token=abc123"),
		want:    "syscall.Errno: Post [x] dial tcp [x] connect: connection refused",
		secrets: []string{"s3cr3t", "abc123", "user:s3cr3t@api.example.com", "token=abc123"},
	}, {
		name:    "AWS access denied",
		err:     errors.New("AccessDenied: User arn:aws:iam::123456789012:user/x is not authorized"),
		want:    "[x] User [x] is not authorized",
		secrets: []string{"123456789012", "arn:aws:iam::123456789012:user/x"},
	}, {
		name: "postgres authentication",
		err:  fmt.Errorf("sql: %w", errors.New(`pq: password authentication failed for user "admin"`)),
		want: `sql: pq: password authentication failed for user "admin"`,
	}, {
		name:    "bearer token",
		err:     errors.New("request rejected: Authorization: Bearer " + jwt),
		want:    "request rejected: Authorization: [x]",
		secrets: []string{jwt, "eyJhbGciOi"},
	}, {
		name:    "dictionary-shaped password after a label",
		err:     errors.New(`login failed: password: "hunter" token: tunafish (expired), Authorization: Bearer letmein`),
		want:    `login failed: password: [x] token: [x] (expired), Authorization: [x]`,
		secrets: []string{"hunter", "tunafish", "letmein"},
	}, {
		name:    "email address and API key",
		err:     errors.New("invalid API key sk_live_4eC39HqLyjWDarjtT1zdp7dc for account ops@example.com, contact security"),
		want:    "invalid API key [x] for account [x] contact security",
		secrets: []string{"sk_live_4eC39HqLyjWDarjtT1zdp7dc", "ops@example.com"},
	}, {
		name:    "status through a method",
		err:     &ecStatusError{status: 429, msg: "SlowDown: rate exceeded for key AKIAIOSFODNN7EXAMPLE"},
		want:    "plugin.ecStatusError status=429: [x] rate exceeded for key [x]",
		secrets: []string{"AKIAIOSFODNN7EXAMPLE"},
	}, {
		name: "context deadline",
		err:  fmt.Errorf("write batch: %w", context.DeadlineExceeded),
		want: "context.deadlineExceededError: write batch: context deadline exceeded",
	}, {
		name:    "mixed case, hex and long words",
		err:     errors.New("got aBcDeF and deadbeefcafebabe0123 and Pneumonoultramicroscopic STATUSES, want EOF - or TLS"),
		want:    "got [x] and [x] and [x] want EOF - or TLS",
		secrets: []string{"aBcDeF", "deadbeefcafebabe0123", "Pneumonoultramicroscopic"},
	}, {
		name: "joined errors take the first branch's type",
		err:  errors.Join(ecDialError("http://h"), errors.New("second")),
		want: "syscall.Errno: Post [x] dial tcp [x] connect: connection refused second",
	}, {
		name: "nil",
		err:  nil,
		want: "",
	}, {
		name: "only whitespace",
		err:  errors.New(" \t\n"),
		want: "",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := errorClass(tc.err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, got, errorClass(tc.err), "deterministic")
			assertErrorClassSafe(t, got, 4, tc.secrets...)
			t.Logf("%q", got)
		})
	}
}

func TestErrorClassTruncatesOnATokenBoundary(t *testing.T) {
	msg := strings.Repeat("retry later ", 30)
	got := errorClass(&ecStatusError{status: 503, msg: msg})
	assert.LessOrEqual(t, len(got), maxErrorClass)
	assert.Greater(t, len(got), maxErrorClass-len(" later"))
	assert.True(t, strings.HasPrefix(got, "plugin.ecStatusError status=503: retry later retry"), got)
	assert.True(t, strings.HasSuffix(got, " retry") || strings.HasSuffix(got, " later"), got)

	// A marker is a token too, and runs of dropped tokens give one marker.
	got = errorClass(errors.New(strings.Repeat("a ", 58) + "x=1 y=2 z=3 bb"))
	assert.Equal(t, strings.Repeat("a ", 58)+"[x]", got)
	got = errorClass(errors.New(strings.Repeat("a ", 59) + "x=1 y=2 z=3 bb"))
	assert.Equal(t, strings.Repeat("a ", 58)+"a", got, "no room for the marker")
}

func TestErrorClassTypeTag(t *testing.T) {
	// The type tag and the status come from types, whatever the message.
	assert.Equal(t, "syscall.Errno: dial tcp [x] connect: connection refused",
		errorClass(ecRefused()), "the innermost type")
	assert.Equal(t, "net.OpError: read tcp [x] timeout",
		errorClass(&net.OpError{Op: "read", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 443},
			Err: errors.New("i/o timeout")}), "a plain errors.New gives no tag")
	assert.Equal(t, "plugin.ecUnexpectedHTTPRes status=503: HTTP request returned unexpected response code (503): 503 Service Unavailable,",
		errorClass(ecUnexpectedHTTPRes{Code: 503, S: "503 Service Unavailable"}))
	assert.Equal(t, "plugin.ecUnexpectedHTTPRes: HTTP request returned unexpected response code (0): x, Error:",
		errorClass(ecUnexpectedHTTPRes{S: "x"}), "a Code out of the HTTP range is no status")
	// An unnamed type gives no tag.
	assert.Equal(t, "boom", errorClass(&struct{ ecStatusError }{ecStatusError{msg: "boom"}}))
}

func TestErrorClassNeverPanics(t *testing.T) {
	var typedNil *ecNilDerefError
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"typed nil", typedNil, "plugin.ecNilDerefError"},
		{"panicking Error", &ecPanicError{in: "Error"}, "plugin.ecPanicError"},
		{"panicking Unwrap", &ecPanicError{in: "Unwrap"}, "plugin.ecPanicError"},
		{"panicking StatusCode", &ecPanicError{in: "StatusCode"}, "plugin.ecPanicError: panicky error"},
		{"panicking, wrapped by fmt", fmt.Errorf("w: %w", &ecPanicError{in: "Error"}), "plugin.ecPanicError: w: [x] method: Error)"},
		{"panicking Unwrap under a plain wrapper", fmt.Errorf("w: %w", &ecPanicError{in: "Unwrap"}), "plugin.ecPanicError"},
		{"Unwrap cycle", &ecLoopError{}, "plugin.ecLoopError: loop"},
		{"join of nils", errors.Join(nil, errors.New("x")), "x"},
		{"typed nil under a plain wrapper", fmt.Errorf("%w", typedNil), "plugin.ecNilDerefError: [x]"},
		{"panicking, of an unnamed type", &struct{ *ecPanicError }{&ecPanicError{in: "Error"}}, droppedMarker},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			require.NotPanics(t, func() { got = errorClass(tc.err) })
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestErrorClassAllocs(t *testing.T) {
	errs := []error{
		errors.New(`pq: password authentication failed for user "admin"`),
		&ecStatusError{status: 503, msg: "Post https://u:p@h/ failed: 503 Service Unavailable"},
		ecUnexpectedHTTPRes{Code: 503}, // its Error allocates; errorClass adds one
	}
	// errorClass adds at most one allocation (its builder) to what the
	// error's own Error allocates; the latter varies a little by build
	// (the race detector), so it is measured, not assumed. Both are taken
	// at their least over a few measurements (allocsPerRun): other tests'
	// goroutines winding down once made a single measurement one too high.
	for _, err := range errs {
		own := allocsPerRun(100, func() { _ = err.Error() })
		assert.LessOrEqual(t, allocsPerRun(100, func() { _ = errorClass(err) }), own+1, "%v", err)
	}
}

// The fuzzed secrets' positions: each template puts a secret where real
// errors carry one. The context ones hide any secret without whitespace,
// whatever its shape; the bare ones hide a secret that is not shaped like an
// allowed token (see ecSecretShaped).
var ecSecretTemplates = []struct {
	name string
	bare bool
	err  func(secret string) error
}{
	{"URL userinfo", false, func(s string) error {
		return ecDialError("https://svc:" + s + "@api.example.com/v1/ingest")
	}},
	{"URL user", false, func(s string) error {
		return ecDialError("https://" + s + "@api.example.com/v1/ingest")
	}},
	{"query value", false, func(s string) error {
		return fmt.Errorf("GET https://api.example.com/v1/ingest?token=%s&x=1 failed: 401 Unauthorized", s)
	}},
	{"password=", false, func(s string) error {
		return fmt.Errorf(`pq: connection "host=db password=%s sslmode=disable" refused`, s)
	}},
	{"Bearer", false, func(s string) error {
		return fmt.Errorf("request rejected: Authorization: Bearer %s: 401 Unauthorized", s)
	}},
	{"token:", false, func(s string) error {
		return fmt.Errorf("invalid credentials, token: %s (expired)", s)
	}},
	{"password:", false, func(s string) error {
		return fmt.Errorf("login as admin failed, password: %s", s)
	}},
	{"blob in a body", true, func(s string) error {
		return ecUnexpectedHTTPRes{Code: 403, S: "403 Forbidden", Body: []byte(`{"error":"bad key ` + s + `"}`)}
	}},
	{"bare blob", true, func(s string) error {
		return fmt.Errorf("sink: %w", fmt.Errorf("key %s is not valid for this account", s))
	}},
	{"quoted blob", true, func(s string) error {
		return fmt.Errorf(`failed to decode "%s": illegal base64 data at input byte 4`, s)
	}},
	{"leading blob", true, func(s string) error {
		return errors.New(s + " rejected")
	}},
}

// ecSecretShaped reports whether s is a plausible secret that cannot pass
// for an allowed token: no whitespace, printable ASCII, at least 8 bytes, and
// letters mixed with digits, or more than 6 digits, or a symbol other than
// ( ) [ ] , ; : . " ', or letters that are not one English-shaped word
// (all lowercase, Capitalized, or ALL CAPS of at most 6, at most 20 letters).
func ecSecretShaped(s string) bool {
	if len(s) < 8 {
		return false
	}
	var letters []byte
	digits, upper, symbol := 0, 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c <= ' ' || c > '~':
			return false
		case '0' <= c && c <= '9':
			digits++
		case 'A' <= c && c <= 'Z':
			upper++
			letters = append(letters, c)
		case 'a' <= c && c <= 'z':
			letters = append(letters, c)
		case !strings.ContainsRune(`()[],;:."'`, rune(c)):
			symbol = true
		}
	}
	if symbol || digits > 6 || digits > 0 && len(letters) > 0 {
		return true
	}
	if len(letters) == 0 {
		return false
	}
	english := len(letters) <= 20 && (upper == 0 ||
		upper == 1 && letters[0] <= 'Z' ||
		upper == len(letters) && upper <= 6)
	return !english
}

// FuzzErrorClass plants a secret in an error's message and checks that
// errorClass keeps it out. The invariants, for every input:
//
//   - errorClass never panics, on any message (noise is arbitrary bytes) and
//     any status;
//   - its result is at most maxErrorClass bytes of printable ASCII, and the
//     same on every call;
//   - a secret (the fuzzed bytes mapped onto '!'..'~', at least 8 of them)
//     planted in a context position (URL userinfo, query value, password=,
//     after "Bearer", "token:" or "password:") never shows, nor any 8 bytes of
//     it that the template's own text does not hold;
//   - nor does a secret in a bare position (a blob in the message or in an
//     echoed body), when it is secret-shaped: mixed letters and digits, a
//     symbol, more than 6 digits, or case no English word has
//     (ecSecretShaped);
//   - and for a secret-shaped secret, in any position, the result is the one
//     a fixed placeholder secret gives: it does not depend on the secret.
func FuzzErrorClass(f *testing.F) {
	for i := range ecSecretTemplates {
		f.Add(uint8(i), []byte("s3cr3tP@ss"), "dial tcp 10.0.0.1:443: connect: connection refused", 503)
		f.Add(uint8(i), []byte("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"), "", 0)
		f.Add(uint8(i), []byte("sk_live_4eC39HqLyjWDarjtT1zdp7dc"), "HTTP 401 Unauthorized", 401)
		f.Add(uint8(i), []byte("correcthorsebattery"), "password: hunter2", 200)
	}
	f.Add(uint8(0), []byte("aBcDeFgHiJ"), "\xff\xfe\x00 \u00a0 \u2028 ((((( ))))) :::: \"'", -1)
	f.Add(uint8(1), []byte("12345678"), strings.Repeat("word ", 40), 99999)

	const placeholder = "Zq7Xw3Kp9Vb2"
	f.Fuzz(func(t *testing.T, pos uint8, raw []byte, noise string, status int) {
		check := func(err error) string {
			var class string
			require.NotPanics(t, func() { class = errorClass(err) }, "%q", noise)
			assert.Equal(t, class, errorClass(err), "deterministic")
			assertErrorClassSafe(t, class, 1)
			return class
		}
		check(errors.New(noise))
		check(fmt.Errorf("wrapped: %w", &ecStatusError{status: status, msg: noise}))
		check(ecUnexpectedHTTPRes{Code: status, S: noise, Body: []byte(noise)})

		if len(raw) > 80 {
			raw = raw[:80]
		}
		secret := make([]byte, len(raw))
		for i, b := range raw {
			secret[i] = '!' + b%('~'-'!'+1)
		}
		s := string(secret)
		tmpl := ecSecretTemplates[int(pos)%len(ecSecretTemplates)]
		shaped := ecSecretShaped(s)
		if len(s) < 8 || tmpl.bare && !shaped {
			return
		}
		class := check(tmpl.err(s))
		assert.NotContains(t, class, s, "%s", tmpl.name)
		own := tmpl.err(" ").Error()
		for i := 0; i+8 <= len(s); i++ {
			if w := s[i : i+8]; !strings.Contains(own, w) {
				assert.NotContains(t, class, w, "%s: 8 bytes of %q", tmpl.name, s)
			}
		}
		if shaped {
			assert.Equal(t, errorClass(tmpl.err(placeholder)), class, "%s: %q", tmpl.name, s)
		}
	})
}
