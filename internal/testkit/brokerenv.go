package testkit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// BrokerEnv is what `resources/kafka/broker.sh start` wrote to its env file
// ($KAFKA_RUN_DIR/env): how to reach the broker it started. A BrokerEnv is a
// plain value, safe for concurrent reads.
type BrokerEnv struct {
	Brokers     string // KAFKA_BROKERS: PLAINTEXT host:port list
	SASLBrokers string // KAFKA_SASL_SSL_BROKERS: SASL_SSL host:port list
	CA          string // KAFKA_TLS_CA: PEM file of the CA that signed the broker's certificate
	UntrustedCA string // KAFKA_TLS_UNTRUSTED_CA: PEM file of an unrelated CA
	User        string // KAFKA_SCRAM_USER
	Password    string // KAFKA_SCRAM_PASSWORD
	Version     string // KAFKA_VERSION: the broker's Apache Kafka version
	RunDir      string // KAFKA_RUN_DIR
	ServerLog   string // KAFKA_SERVER_LOG
	Vars        map[string]string
	From        string // where it was read: the env file's path, or "the environment"
}

// LookupBrokerEnv finds the broker to test against, in this order:
//
//  1. the env file $KAFKA_ENV_FILE names;
//  2. the process's KAFKA_* variables, when KAFKA_BROKERS is set;
//  3. when script (resources/kafka/broker.sh) is not empty, the env file in
//     the run dir `bash script run-dir` prints: the broker of `make
//     broker-start` in this checkout.
//
// It fails when none gives a KAFKA_BROKERS. It does not check that the
// broker is reachable: Dial does.
func LookupBrokerEnv(script string) (*BrokerEnv, error) {
	var vars map[string]string
	from := os.Getenv("KAFKA_ENV_FILE")
	var err error
	switch {
	case from != "":
		if vars, err = ReadEnvFile(from); err != nil {
			return nil, err
		}
	case os.Getenv("KAFKA_BROKERS") != "":
		from, vars = "the environment", map[string]string{}
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "KAFKA_") {
				vars[k] = v
			}
		}
	case script != "":
		out, err := exec.Command("bash", script, "run-dir").Output()
		if err != nil {
			return nil, fmt.Errorf("KAFKA_ENV_FILE and KAFKA_BROKERS are unset, and %s run-dir failed: %w", script, err)
		}
		from = filepath.Join(strings.TrimSpace(string(out)), "env")
		if vars, err = ReadEnvFile(from); err != nil {
			return nil, fmt.Errorf("KAFKA_ENV_FILE and KAFKA_BROKERS are unset and the default env file (of make broker-start) is unusable: %w", err)
		}
	default:
		return nil, errors.New("KAFKA_ENV_FILE and KAFKA_BROKERS are unset")
	}
	e := &BrokerEnv{
		Brokers:     vars["KAFKA_BROKERS"],
		SASLBrokers: vars["KAFKA_SASL_SSL_BROKERS"],
		CA:          vars["KAFKA_TLS_CA"],
		UntrustedCA: vars["KAFKA_TLS_UNTRUSTED_CA"],
		User:        vars["KAFKA_SCRAM_USER"],
		Password:    vars["KAFKA_SCRAM_PASSWORD"],
		Version:     vars["KAFKA_VERSION"],
		RunDir:      vars["KAFKA_RUN_DIR"],
		ServerLog:   vars["KAFKA_SERVER_LOG"],
		Vars:        vars,
		From:        from,
	}
	if e.Brokers == "" {
		return nil, fmt.Errorf("KAFKA_BROKERS is not set (read from %s)", from)
	}
	return e, nil
}

// Dial checks that the first of Brokers accepts a TCP connection within
// timeout: with Kafka 4, whose client port opens only once the broker is
// unfenced, that means it is up.
func (e *BrokerEnv) Dial(timeout time.Duration) error {
	addr, _, _ := strings.Cut(e.Brokers, ",")
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return fmt.Errorf("broker %s (from %s) is not reachable: %w", e.Brokers, e.From, err)
	}
	return conn.Close()
}

// ReadEnvFile reads an env file with ParseEnv.
func ReadEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars, err := ParseEnv(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return vars, nil
}

// ParseEnv reads KEY=value lines and returns the values as a POSIX shell
// that sources the file would assign them. broker.sh's write_env writes a
// value bare when it holds only [A-Za-z0-9_./:,@+=-], and otherwise inside
// single quotes, each quote in it closing the quotes, adding an escaped
// quote and opening them again:
//
//	KAFKA_BROKERS=127.0.0.1:19092
//	KAFKA_RUN_DIR='/tmp/my kafka'
//	KAFKA_SCRAM_PASSWORD='it'\''s'
//
// ParseEnv accepts both of those styles, which is what the two readers it
// replaces accepted between them (tests/ undid the shell quoting; bench/e2e
// only stripped the outer quotes, and so misread the last line above), and
// the rest of the shell's quoting as well, so that a file written by hand
// reads as `source` would read it:
//
//   - a value is a run of bare characters, '...' spans (taken literally,
//     with no escapes), "..." spans (in which \\, \", \$ and \` stand for the
//     character after the backslash, and any other backslash is kept) and,
//     outside quotes, \c standing for c; KEY= is the empty string;
//   - blank lines, and lines whose first non-blank character is #, are
//     skipped; a line's leading and trailing blanks are ignored;
//   - KEY must be a shell name ([A-Za-z_][A-Za-z0-9_]*), and a later line
//     for a KEY overrides an earlier one.
//
// What a shell would expand or treat as syntax is an error rather than a
// guess: a $ or a ` outside single quotes, unquoted blanks, a quote left
// open, a line without =, and any of ;&|<>() outside quotes.
func ParseEnv(r io.Reader) (map[string]string, error) {
	vars := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: no = in %q", n, line)
		}
		if !isShellName(k) {
			return nil, fmt.Errorf("line %d: %q is not a variable name", n, k)
		}
		val, err := shellWord(v)
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %w", n, k, err)
		}
		vars[k] = val
	}
	return vars, sc.Err()
}

func isShellName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// shellWord undoes the shell's quoting of one word (ParseEnv says which).
func shellWord(v string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\'':
			end := strings.IndexByte(v[i+1:], '\'')
			if end < 0 {
				return "", errors.New("a single quote is left open")
			}
			b.WriteString(v[i+1 : i+1+end])
			i += end + 1
		case '"':
			j := i + 1
			for ; j < len(v) && v[j] != '"'; j++ {
				switch {
				case v[j] == '\\' && j+1 < len(v) && strings.IndexByte(`\"$`+"`", v[j+1]) >= 0:
					j++
					b.WriteByte(v[j])
				case v[j] == '$' || v[j] == '`':
					return "", fmt.Errorf("%c inside double quotes: expansion is not supported", v[j])
				default:
					b.WriteByte(v[j])
				}
			}
			if j == len(v) {
				return "", errors.New("a double quote is left open")
			}
			i = j
		case '\\':
			if i+1 == len(v) {
				return "", errors.New("the value ends in a backslash")
			}
			i++
			b.WriteByte(v[i])
		case '$', '`':
			return "", fmt.Errorf("unquoted %c: expansion is not supported", c)
		case ' ', '\t':
			return "", errors.New("unquoted blank: quote the value")
		case ';', '&', '|', '<', '>', '(', ')':
			return "", fmt.Errorf("unquoted %c: quote the value", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
