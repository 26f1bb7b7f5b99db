package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// build compiles every contender into dir: cmd/watermark-connect of headRef
// (the working tree when empty), bench/baseline and bench/rawloop of it too
// when others is set, cmd/watermark-connect of headRef again with -pgo=off
// when noPGO is set, and, when oldRef is set, cmd/watermark-connect of
// oldRef. A ref is built from a copy of its files (testkit.ExportRef) under
// dir, removed again once built.
//
// cmd/watermark-connect is built as `make build` builds it, with its
// default.pgo when it has one (go build's -pgo=auto). bench/baseline is
// built with the same profile, so that `wm` / `base` keeps meaning what
// tracking costs (and the same GC settings: it calls gctune as the binary
// does); the old ref's binary is built as that commit's own build was.
func build(root, dir, headRef, oldRef string, others, noPGO bool) (binaries, error) {
	ctx := context.Background()
	b := binaries{
		head:     filepath.Join(dir, "watermark-connect"),
		baseline: filepath.Join(dir, "baseline"),
		rawloop:  filepath.Join(dir, "rawloop"),
		oldRef:   oldRef,
	}
	src := root
	if headRef != "" {
		src = refDir(dir, headRef)
		defer os.RemoveAll(src)
		if err := testkit.ExportRef(ctx, root, headRef, src); err != nil {
			return b, err
		}
	}
	builds := []testkit.Build{{Dir: src, Package: testkit.Command, Out: b.head}}
	if others {
		pgo := ""
		if p := filepath.Join(src, testkit.Command, "default.pgo"); fileExists(p) {
			pgo = p
		}
		builds = append(builds,
			testkit.Build{Dir: src, Package: "./bench/baseline", Out: b.baseline, PGO: pgo},
			testkit.Build{Dir: src, Package: "./bench/rawloop", Out: b.rawloop})
	}
	if noPGO {
		b.headOff = filepath.Join(dir, "watermark-connect-nopgo")
		builds = append(builds, testkit.Build{Dir: src, Package: testkit.Command, Out: b.headOff, PGO: "off"})
	}
	for _, bd := range builds {
		if _, err := bd.Run(ctx); err != nil {
			return b, err
		}
	}
	if oldRef == "" {
		return b, nil
	}
	src = refDir(dir, oldRef)
	defer os.RemoveAll(src)
	if err := testkit.ExportRef(ctx, root, oldRef, src); err != nil {
		return b, err
	}
	b.old = filepath.Join(dir, "watermark-connect-"+oldRef)
	if _, err := (testkit.Build{Dir: src, Out: b.old}).Run(ctx); err != nil {
		return b, err
	}
	return b, nil
}

// buildPC packages bench/parallelconsumer of the working tree (Maven, its
// dependencies from the local repository or Maven Central) and copies the
// shaded jar into dir. The contender is the benchmark's, not the code under
// test, so -head-ref does not apply to it.
func buildPC(root, dir string) (string, error) {
	src := filepath.Join(root, "bench", "parallelconsumer")
	if err := run(src, "mvn", "-q", "-B", "-DskipTests", "package"); err != nil {
		return "", fmt.Errorf("building Parallel Consumer's contender (leave pc out of -key-contenders to run without it): %w", err)
	}
	jar := filepath.Join(dir, "pc-bench.jar")
	return jar, run(root, "cp", filepath.Join(src, "target", "pc-bench.jar"), jar)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// refDir is where build puts the files of ref.
func refDir(dir, ref string) string {
	return filepath.Join(dir, "src-"+strings.NewReplacer("/", "_", "~", "_", "^", "_").Replace(ref))
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
