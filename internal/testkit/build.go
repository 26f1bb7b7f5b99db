package testkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ModulePath is the import path of this module; ModuleRoot looks for its
// go.mod.
const ModulePath = "github.com/watermark-connect/watermark-connect"

// Command is the package of the watermark-connect binary, relative to the
// module root.
const Command = "./cmd/watermark-connect"

// ModuleRoot returns the folder of this module's go.mod, from the working
// directory up: go test runs a package's tests in its own folder, go run
// where it was called.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module "+ModulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the " + ModulePath + " module: run from the project")
		}
		dir = parent
	}
}

// Build is one go build of a main package. It is a plain value; Run may be
// called from several goroutines for different Outs.
type Build struct {
	Dir     string // where go build runs: the module root, or a copy of a revision (ExportRef)
	Package string // the package, relative to Dir (default Command)
	Out     string // the binary to write; a relative path is taken from the working directory
	Race    bool   // build with -race
	LDFlags string // -ldflags, e.g. -X main.version=...; none when empty
	// PGO is go build's -pgo: "" leaves Go's default (auto: the main
	// package's default.pgo, if it has one), "off" builds without a
	// profile, a path builds with that profile.
	PGO string
}

// Run builds, and returns the binary's absolute path. The error holds go
// build's output.
func (b Build) Run(ctx context.Context) (string, error) {
	out, err := filepath.Abs(b.Out)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	args := []string{"build", "-o", out}
	if b.Race {
		args = append(args, "-race")
	}
	if b.LDFlags != "" {
		args = append(args, "-ldflags", b.LDFlags)
	}
	if b.PGO != "" {
		args = append(args, "-pgo="+b.PGO)
	}
	pkg := b.Package
	if pkg == "" {
		pkg = Command
	}
	args = append(args, pkg)
	c := exec.CommandContext(ctx, "go", args...)
	c.Dir = b.Dir
	if o, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), b.Dir, err, o)
	}
	return out, nil
}

// ExportRef writes the files of git revision ref of the repository at root
// into dir (emptied first), through git archive: a copy to build a
// committed revision from, with nothing of the working tree and no git
// worktree to clean up.
func ExportRef(ctx context.Context, root, ref, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c := exec.CommandContext(ctx, "bash", "-c", `set -o pipefail; git -C "$1" archive "$2" | tar -x -C "$3"`, "export", root, ref, dir)
	if o, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive %s: %w\n%s", ref, err, o)
	}
	return nil
}

// Binary builds a package once, on first use, into a temporary directory
// of its own, for the tests of one process to share; Remove (from
// TestMain) deletes it. A Binary is safe for concurrent use.
type Binary struct {
	// Build says what to build; its Out is ignored. Set it before the
	// first Path and leave it.
	Build Build
	// Timeout bounds the build (0: none).
	Timeout time.Duration

	once sync.Once
	dir  string // the temporary directory; written once, under once
	path string
	err  error
}

// Path builds the binary the first time, and returns its path, or the
// error of that one build, every time.
func (b *Binary) Path() (string, error) {
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "wmc-testkit-bin-")
		if b.err != nil {
			return
		}
		ctx := context.Background()
		if b.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, b.Timeout)
			defer cancel()
		}
		bd := b.Build
		name := filepath.Base(bd.Package)
		if bd.Package == "" || name == "." {
			name = "watermark-connect"
		}
		bd.Out = filepath.Join(b.dir, name)
		b.path, b.err = bd.Run(ctx)
	})
	return b.path, b.err
}

// Remove deletes the binary's temporary directory, if it was built.
func (b *Binary) Remove() {
	b.once.Do(func() { b.err = errors.New("testkit: Binary used after Remove") })
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}
