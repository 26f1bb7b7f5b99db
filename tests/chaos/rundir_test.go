package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// The default run dirs belong to a checkout: the same for one path, another
// for another, in the temporary directory, and broker.sh names its own the
// same way.
func TestDefaultRunDir(t *testing.T) {
	root, err := testkit.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	a, b := defaultRunDir(root), defaultRunDir(root)
	if a != b {
		t.Fatalf("two default run dirs for one checkout: %s and %s", a, b)
	}
	if filepath.Dir(a) != tmp || !strings.HasPrefix(filepath.Base(a), "wm-chaos-") || len(filepath.Base(a)) != len("wm-chaos-")+8 {
		t.Errorf("default run dir %s: want %s/wm-chaos-<8 hex digits>", a, tmp)
	}
	if other := defaultRunDir(filepath.Join(tmp, "another-checkout")); other == a {
		t.Errorf("two checkouts share the run dir %s", a)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash: broker.sh's run dir not compared")
	}
	cmd := exec.Command("bash", filepath.Join(root, "resources", "kafka", "broker.sh"), "run-dir")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KAFKA_RUN_DIR=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("broker.sh run-dir: %v", err)
	}
	want := filepath.Join(tmp, "watermark-connect-kafka-"+checkoutHash(root))
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("broker.sh run-dir = %s, want %s (the hash of %s)", got, want, root)
	}
}
