package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
)

// defaultRunDir is --run-dir's default: wm-chaos-<hash> in the system's
// temporary directory ($TMPDIR, else /tmp), <hash> naming the checkout at
// root (checkoutHash). Two checkouts on one machine thus never share a run
// dir: a run of one never wipes or kills the broker of the other.
func defaultRunDir(root string) string {
	return filepath.Join(os.TempDir(), "wm-chaos-"+checkoutHash(root))
}

// checkoutHash is the first 8 hex digits of the SHA-256 of the checkout's
// absolute path, symlinks resolved: the same hash resources/kafka/broker.sh
// puts in its default run dir (`printf %s "$(pwd -P)" | sha256sum`).
func checkoutHash(root string) string {
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	sum := sha256.Sum256([]byte(root))
	return hex.EncodeToString(sum[:4])
}

// jvmFlags are the flags of every JVM the harness launches itself (the
// cluster's nodes and their storage format), so that nothing of theirs
// outlives the run outside dir, even after a kill -9: java.io.tmpdir is dir
// (snappy-java extracts its native library there on every start), and
// -XX:-UsePerfData drops the hsperfdata file, which HotSpot always writes to
// /tmp whatever java.io.tmpdir says. The single broker gets the same from
// broker.sh.
func jvmFlags(dir string) []string {
	return []string{"-XX:-UsePerfData", "-Djava.io.tmpdir=" + dir}
}
