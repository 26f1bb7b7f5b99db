package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// pgoProfile takes a CPU profile of `wm` (kafka_watermark with its
// defaults, into drop) over one whole run of every cell of the matrix, and
// merges them (go tool pprof -proto) into out: the profile that make pgo
// commits as cmd/watermark-connect/default.pgo. Every cell weighs by the CPU
// it took, so the profile follows where the binary spends its time across
// record sizes, partition counts and codecs alike.
func pgoProfile(ctx context.Context, o options, m *matrix, out string) error {
	ct, ok := m.contender("wm")
	if !ok {
		return fmt.Errorf("-sections pgo profiles the wm contender: keep it in -contenders")
	}
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		return err
	}
	var files []string
	for i, c := range m.cells {
		// The profile must cover the run: records at a slow 100,000 a
		// second plus the start. A process that has finished idles, which
		// adds nothing to a CPU profile.
		secs := c.records/100_000 + 5
		path := filepath.Join(o.profileDir, fmt.Sprintf("cpu-pgo-%d.pprof", i))
		var perr error
		if _, err := m.runOne(ctx, o, c, ct, fmt.Sprintf("pgo%d", i), true, func(addr string) {
			perr = fetchProfile(ctx, addr, secs, path)
		}); err != nil {
			return fmt.Errorf("profile of %s: %w", c, err)
		} else if perr != nil {
			return fmt.Errorf("profile of %s: %w", c, perr)
		}
		logf("profiled wm on %s: %s", c, path)
		files = append(files, path)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	args := append([]string{"tool", "pprof", "-proto", "-output", out}, files...)
	if b, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	logf("merged %d profiles into %s", len(files), out)
	return nil
}
