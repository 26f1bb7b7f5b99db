package testkit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestModuleRoot(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if got, want := filepath.Join(root, "internal", "testkit"), wd; got != want {
		t.Errorf("ModuleRoot() = %s, want the folder two up from %s", root, want)
	}
}

func TestBuildRunsGoBuild(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "sub", "hello")
	path, err := Build{Dir: root, Package: "./internal/testkit/testdata/hello", Out: out, LDFlags: "-X main.greeting=stamped"}.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if path != out {
		t.Errorf("Run() = %s, want %s", path, out)
	}
	got, err := exec.Command(path).Output()
	if err != nil || strings.TrimSpace(string(got)) != "stamped" {
		t.Errorf("the binary printed %q (%v), want the -ldflags value", got, err)
	}
	_, err = Build{Dir: root, Package: "./internal/testkit/testdata/absent", Out: out}.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("building a missing package: err = %v, want go build's complaint", err)
	}
}

func TestBinaryBuildsOnce(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b := &Binary{Build: Build{Dir: root, Package: "./internal/testkit/testdata/hello"}, Timeout: 2 * time.Minute}
	p1, err := b.Path()
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p1)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := b.Path()
	st2, err := os.Stat(p2)
	if p1 != p2 || err != nil || !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("second Path() = %s (%v), want the first build, %s, untouched", p2, err, p1)
	}
	b.Remove()
	if _, err := os.Stat(filepath.Dir(p1)); !os.IsNotExist(err) {
		t.Errorf("after Remove, the binary's folder: %v, want it gone", err)
	}
}

func TestExportRef(t *testing.T) {
	if testing.Short() {
		t.Skip("exports the whole HEAD revision")
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	if err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	dir := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(filepath.Join(dir, "stale"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ExportRef(context.Background(), root, "HEAD", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Errorf("go.mod of HEAD: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "stale")); !os.IsNotExist(err) {
		t.Errorf("a folder from before the export: %v, want it gone", err)
	}
	if err := ExportRef(context.Background(), root, "no-such-ref-anywhere", dir); err == nil {
		t.Error("exporting a missing ref: no error")
	}
}
