package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseEnv(t *testing.T) {
	for _, c := range []struct {
		line string
		want string // the value of K
		err  string // a part of the error, when it must fail
	}{
		// What broker.sh writes: bare, or single-quoted with '\'' for a quote.
		{line: `K=127.0.0.1:19092,127.0.0.1:19093`, want: `127.0.0.1:19092,127.0.0.1:19093`},
		{line: `K=SCRAM-SHA-256,SCRAM-SHA-512`, want: `SCRAM-SHA-256,SCRAM-SHA-512`},
		{line: `K='/tmp/my kafka/env'`, want: `/tmp/my kafka/env`},
		{line: `K='it'\''s'`, want: `it's`},
		{line: `K=''\'''`, want: `'`},
		{line: `K='a\b'`, want: `a\b`}, // no escapes inside single quotes
		{line: `K='$HOME'`, want: `$HOME`},
		{line: `K=`, want: ``},
		{line: `K=''`, want: ``},
		// The rest of the shell's quoting, as `source` reads it.
		{line: `K="a b"`, want: `a b`},
		{line: `K="say \"hi\" \\ \$ \` + "`" + ` \n"`, want: `say "hi" \ $ ` + "`" + ` \n`},
		{line: `K=a\ b`, want: `a b`},
		{line: `K=pre'mid dle'"post"`, want: `premid dlepost`},
		{line: `  K=x  `, want: `x`},
		{line: `K=a=b#c`, want: `a=b#c`},
		// What a shell would expand or parse differently.
		{line: `K=$HOME`, err: "expansion"},
		{line: `K="$HOME"`, err: "expansion"},
		{line: "K=`id`", err: "expansion"},
		{line: `K=a b`, err: "blank"},
		{line: `K=a;b`, err: "unquoted ;"},
		{line: `K='open`, err: "single quote is left open"},
		{line: `K="open`, err: "double quote is left open"},
		{line: `K=trailing\`, err: "backslash"},
		{line: `export K=x`, err: "not a variable name"},
		{line: `1K=x`, err: "not a variable name"},
		{line: `just words`, err: "no ="},
	} {
		got, err := ParseEnv(strings.NewReader("# a comment\n\n" + c.line + "\n"))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseEnv(%s) = %q, %v; want an error containing %q", c.line, got["K"], err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("ParseEnv(%s): %v; want %q", c.line, err, c.want)
		case c.err == "" && got["K"] != c.want:
			t.Errorf("ParseEnv(%s) = %q, want %q", c.line, got["K"], c.want)
		}
	}
	got, err := ParseEnv(strings.NewReader("A=1\nB=2\nA=3\n"))
	if want := map[string]string{"A": "3", "B": "2"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseEnv of a repeated key = %v, %v; want %v", got, err, want)
	}
}

// TestParseEnvReadsBrokerSh quotes values with the very line of
// resources/kafka/broker.sh's write_env that quotes them, and checks that
// ParseEnv reads back what bash's `source` reads back: the original value.
func TestParseEnvReadsBrokerSh(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "resources", "kafka", "broker.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var quote string
	for _, l := range strings.Split(string(script), "\n") {
		if strings.Contains(l, `|| v="'`) {
			quote = strings.TrimSpace(l)
		}
	}
	if quote == "" {
		t.Fatal(`broker.sh has no quoting line (one with || v="'): update this test to its new write_env`)
	}
	values := []string{"127.0.0.1:19092", "/tmp/run dir", "it's", "''", `a\b`, `$HOME`, "`id`", `"dq"`, "tab\there", "", "a=b", "ünï"}
	dir := t.TempDir()
	env := filepath.Join(dir, "env")
	// Write V0..Vn as write_env does, then source the file and print each
	// value back, NUL-terminated.
	prog := `set -eu
i=0
for v in "$@"; do
  ` + quote + `
  printf 'V%d=%s\n' "$i" "$v"
  i=$((i + 1))
done >"$ENV_OUT"
. "$ENV_OUT"
i=0
for _ in "$@"; do eval "printf '%s\0' \"\$V$i\""; i=$((i + 1)); done
`
	cmd := exec.Command("bash", append([]string{"-c", prog, "write"}, values...)...)
	cmd.Env = append(os.Environ(), "ENV_OUT="+env)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	sourced := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	got, err := ReadEnvFile(env)
	if err != nil {
		b, _ := os.ReadFile(env)
		t.Fatalf("ReadEnvFile: %v\n%s", err, b)
	}
	for i, v := range values {
		k := fmt.Sprintf("V%d", i)
		if sourced[i] != v {
			t.Errorf("bash sourced %s = %q, want %q (the quoting line changed meaning?)", k, sourced[i], v)
		}
		if got[k] != v {
			t.Errorf("ReadEnvFile: %s = %q, want %q as bash reads it", k, got[k], v)
		}
	}
}
