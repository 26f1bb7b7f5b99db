package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// convertBatch is bench/convert's batch length, by which its per-batch
// figures are divided.
const convertBatch = 1024

// convert measures the record-to-message conversion alone (bench/convert):
// allocations and bytes per record from its benchmark, and, when valgrind
// is installed, instructions per record under cachegrind with GOGC=off,
// which unlike time do not depend on what else the machine runs.
func convert(w io.Writer, o options) error {
	bin := filepath.Join(o.workDir, "convert.test")
	if err := run(o.root, "go", "test", "-c", "-o", bin, "./bench/convert"); err != nil {
		return err
	}
	out, err := exec.Command(bin, "-test.run", "^$", "-test.bench", ".", "-test.benchmem", "-test.benchtime", "1000x").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", bin, err, out)
	}
	type figures struct{ bytes, allocs, instr float64 }
	got := map[string]*figures{}
	re := regexp.MustCompile(`BenchmarkRecordsToBatch/(\S+?)(?:-\d+)?\s.*?(\d+) B/op\s+(\d+) allocs/op`)
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		b, _ := strconv.ParseFloat(m[2], 64)
		a, _ := strconv.ParseFloat(m[3], 64)
		got[m[1]] = &figures{bytes: b / convertBatch, allocs: a / convertBatch}
	}
	if len(got) != 2 {
		return fmt.Errorf("unexpected benchmark output:\n%s", out)
	}
	valgrind, verr := exec.LookPath("valgrind")
	if verr == nil {
		const loops = 300
		count := func(name string) (float64, error) {
			cmd := exec.Command(valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
				bin, "-test.run", "^TestConvertLoop$")
			cmd.Env = append(os.Environ(), "GOGC=off", "BENCH_CONVERT="+name, fmt.Sprintf("BENCH_CONVERT_LOOPS=%d", loops))
			out, err := cmd.CombinedOutput()
			if err != nil {
				return 0, fmt.Errorf("valgrind %s: %w\n%s", name, err, out)
			}
			m := regexp.MustCompile(`I\s+refs:\s+([\d,]+)`).FindSubmatch(out)
			if m == nil {
				return 0, fmt.Errorf("no instruction count in valgrind's output:\n%s", out)
			}
			return strconv.ParseFloat(strings.ReplaceAll(string(m[1]), ",", ""), 64)
		}
		setup, err := count("none")
		if err != nil {
			return err
		}
		for name, f := range got {
			n, err := count(name)
			if err != nil {
				return err
			}
			f.instr = (n - setup) / (loops * convertBatch)
		}
	}
	fmt.Fprintf(w, "### The conversion alone (bench/convert)\n\n")
	fmt.Fprintf(w, "plugin.RecordsToBatch beside the conversion as it was at %s (copied into bench/convert), on one batch of %d records of 100 B with keys and no headers. %s sets 7 keys; today's sets 8 (kafka_lag is new) and kafka_key is []byte.\n\n",
		"4cc7f9b", convertBatch, "4cc7f9b")
	fmt.Fprintf(w, "| conversion | allocations per record | bytes per record | instructions per record |\n| --- | ---: | ---: | ---: |\n")
	for _, name := range []string{"4cc7f9b", "head"} {
		f := got[name]
		instr := "valgrind not installed"
		if verr == nil {
			instr = fmt.Sprintf("%.0f", f.instr)
		}
		fmt.Fprintf(w, "| `%s` | %.2f | %.0f | %s |\n", name, f.allocs, f.bytes, instr)
	}
	if verr == nil {
		fmt.Fprintf(w, "\nInstructions: cachegrind with GOGC=off, less a run that only builds the batch; head / 4cc7f9b = %.2f.\n", got["head"].instr/got["4cc7f9b"].instr)
	}
	fmt.Fprintln(w)
	return nil
}
