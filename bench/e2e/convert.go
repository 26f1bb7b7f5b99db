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
	got := map[string]*figures{} // by "<timestamps>/<conversion>"
	re := regexp.MustCompile(`BenchmarkRecordsToBatch/ts=(\w+)/(\S+?)(?:-\d+)?\s.*?(\d+) B/op\s+(\d+) allocs/op`)
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		b, _ := strconv.ParseFloat(m[3], 64)
		a, _ := strconv.ParseFloat(m[4], 64)
		got[m[1]+"/"+m[2]] = &figures{bytes: b / convertBatch, allocs: a / convertBatch}
	}
	stamps, names := []string{"distinct", "shared"}, []string{"4cc7f9b", "29b9199", "head"}
	if len(got) != len(stamps)*len(names) {
		return fmt.Errorf("unexpected benchmark output:\n%s", out)
	}
	valgrind, verr := exec.LookPath("valgrind")
	if verr == nil {
		const loops = 300
		count := func(ts, name string) (float64, error) {
			cmd := exec.Command(valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
				bin, "-test.run", "^TestConvertLoop$")
			cmd.Env = append(os.Environ(), "GOGC=off", "BENCH_CONVERT="+name, "BENCH_CONVERT_TS="+ts, fmt.Sprintf("BENCH_CONVERT_LOOPS=%d", loops))
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
		for _, ts := range stamps {
			setup, err := count(ts, "none")
			if err != nil {
				return err
			}
			for _, name := range names {
				n, err := count(ts, name)
				if err != nil {
					return err
				}
				got[ts+"/"+name].instr = (n - setup) / (loops * convertBatch)
			}
		}
	}
	fmt.Fprintf(w, "### The conversion alone (bench/convert)\n\n")
	fmt.Fprintf(w, "plugin.RecordsToBatch beside the conversion as it was at 4cc7f9b and at 29b9199 (copied into bench/convert), on one batch of %d records of 100 B with keys and no headers, their timestamps one millisecond apart (distinct) or 32 to a millisecond (shared). 4cc7f9b sets 7 keys; the others set 8 (kafka_lag is new) and kafka_key is []byte.\n\n", convertBatch)
	fmt.Fprintf(w, "| timestamps | conversion | allocations per record | bytes per record | instructions per record |\n| --- | --- | ---: | ---: | ---: |\n")
	for _, ts := range stamps {
		for _, name := range names {
			f := got[ts+"/"+name]
			instr := "valgrind not installed"
			if verr == nil {
				instr = fmt.Sprintf("%.0f", f.instr)
			}
			fmt.Fprintf(w, "| %s | `%s` | %.2f | %.0f | %s |\n", ts, name, f.allocs, f.bytes, instr)
		}
	}
	if verr == nil {
		fmt.Fprintf(w, "\nInstructions: cachegrind with GOGC=off, less a run that only builds the batch; head / 29b9199 = %.2f (distinct), %.2f (shared); head / 4cc7f9b = %.2f (distinct).\n",
			got["distinct/head"].instr/got["distinct/29b9199"].instr, got["shared/head"].instr/got["shared/29b9199"].instr,
			got["distinct/head"].instr/got["distinct/4cc7f9b"].instr)
	}
	fmt.Fprintln(w)
	return nil
}
