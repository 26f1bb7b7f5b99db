package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// build compiles every contender into dir: cmd/watermark-connect,
// bench/baseline and bench/rawloop of headRef (the working tree when
// empty), and, when oldRef is set, cmd/watermark-connect of oldRef. A ref is
// built from a temporary git worktree, removed again once built.
func build(root, dir, headRef, oldRef string) (binaries, error) {
	b := binaries{
		head:     filepath.Join(dir, "watermark-connect"),
		baseline: filepath.Join(dir, "baseline"),
		rawloop:  filepath.Join(dir, "rawloop"),
		oldRef:   oldRef,
	}
	src := root
	if headRef != "" {
		wt, remove, err := worktree(root, dir, headRef)
		if err != nil {
			return b, err
		}
		defer remove()
		src = wt
	}
	for out, pkg := range map[string]string{b.head: "./cmd/watermark-connect", b.baseline: "./bench/baseline", b.rawloop: "./bench/rawloop"} {
		if err := run(src, "go", "build", "-o", out, pkg); err != nil {
			return b, err
		}
	}
	if oldRef == "" {
		return b, nil
	}
	wt, remove, err := worktree(root, dir, oldRef)
	if err != nil {
		return b, err
	}
	defer remove()
	b.old = filepath.Join(dir, "watermark-connect-"+oldRef)
	if err := run(wt, "go", "build", "-o", b.old, "./cmd/watermark-connect"); err != nil {
		return b, err
	}
	return b, nil
}

// worktree checks ref out in a detached worktree under dir.
func worktree(root, dir, ref string) (string, func(), error) {
	wt := filepath.Join(dir, "worktree-"+strings.NewReplacer("/", "_", "~", "_", "^", "_").Replace(ref))
	if err := run(root, "git", "worktree", "add", "--detach", wt, ref); err != nil {
		return "", nil, err
	}
	return wt, func() { _ = run(root, "git", "worktree", "remove", "--force", wt) }, nil
}

// describe names the commit that ref (the working tree when empty, with
// -dirty when it has changes) is.
func describe(root, ref string) string {
	args := []string{"-C", root, "describe", "--always", "--dirty"}
	if ref != "" {
		args = []string{"-C", root, "describe", "--always", ref}
	}
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func run(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}
