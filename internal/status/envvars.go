package status

import (
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Benthos interpolates environment variables in a config's text before it
// parses the YAML, and keeps the function that does it internal
// (internal/config.Reader.ReplaceEnvVariables in v4.60.0). Status reads the
// same files, so interpolate follows the same syntax, as Benthos documents it
// and its tests pin it:
//
//	${NAME}               the variable's value; unset is an error (set to "" is not)
//	${NAME:default}       the value, or default when the variable is unset or ""
//	${NAME|base64decode}  the value, base64-decoded (also after a default)
//	${{NAME}}             the literal text ${NAME}, not interpolated
//
// NAME is [0-9A-Za-z_.]+. A default runs to the closing brace and may hold
// whole ${...} sequences (Bloblang interpolations), which are kept as they
// are; its last '|' starts a function name. Every newline of a substituted
// value becomes the two characters \n, so a value never adds lines: line
// numbers in the interpolated text are those of the file.
//
// TestInterpolateMatchesBenthos compares it, through Benthos's public
// StreamBuilder, with the interpolation `run` does.
var (
	envRef     = regexp.MustCompile(`\$\{` + envName + `(?:` + envDefault + `)?(?:\|[0-9A-Za-z]+)?\}`)
	envEscaped = regexp.MustCompile(`\$\{(\{` + envName + `(?:` + envDefault + `)?\})\}`)
)

const (
	envName    = `[0-9A-Za-z_.]+`
	envDefault = `:(?:\$\{[^}]+\}|[^}])*`
)

// MissingEnvError is a config that refers, with no default, to environment
// variables that are not set. Benthos's run refuses such a config (it is a
// lint error), and so does status. A value once returned, safe for
// concurrent use.
type MissingEnvError struct {
	Names []string // the variables, in the order they first appear
}

func (e *MissingEnvError) Error() string {
	return fmt.Sprintf("required environment variables were not set: %s", strings.Join(e.Names, ", "))
}

// interpolate replaces every environment reference in text, looking values
// up with lookup. It returns a *MissingEnvError naming each unset variable
// referred to without a default, or the error of an unknown or failing
// function; never a variable's value.
func interpolate(text []byte, lookup func(string) (string, bool)) ([]byte, error) {
	var missing []string
	seen := map[string]bool{}
	var errs []error
	out := envRef.ReplaceAllFunc(text, func(ref []byte) []byte {
		body := string(ref[2 : len(ref)-1]) // between "${" and "}"
		var value, fn string
		if name, def, hasDefault := strings.Cut(body, ":"); hasDefault {
			if i := strings.LastIndexByte(def, '|'); i >= 0 {
				def, fn = def[:i], def[i+1:]
			}
			if v, _ := lookup(name); v != "" {
				value = v
			} else {
				value = def
			}
		} else {
			if i := strings.LastIndexByte(name, '|'); i >= 0 {
				name, fn = name[:i], name[i+1:]
			}
			v, ok := lookup(name)
			if !ok && !seen[name] {
				seen[name] = true
				missing = append(missing, name)
			}
			value = v
		}
		switch fn {
		case "":
		case "base64decode":
			decoded, err := base64.StdEncoding.DecodeString(value)
			if err != nil {
				// The error names the byte offset, never the value.
				errs = append(errs, fmt.Errorf("failed to decode base64-encoded env var: %w", err))
			}
			value = string(decoded)
		default:
			errs = append(errs, fmt.Errorf("unknown env var decode function: %s", fn))
		}
		return []byte(strings.ReplaceAll(value, "\n", `\n`))
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return nil, &MissingEnvError{Names: missing}
	}
	return envEscaped.ReplaceAll(out, []byte("$$$1")), nil
}
