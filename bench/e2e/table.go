package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Targets: kafka_watermark keeps at least 95% of the baseline's records/s in
// every cell (issue 12). Against the old binary (issue 31, measured against
// 29b9199): at most 0.75 of its CPU per record with values up to 512 bytes
// and 0.85 above, records/s not lower, and a peak RSS at most 2.5 times its.
const (
	targetVsBaseline    = 0.95
	targetVsOldSmall    = 0.75
	targetVsOldLarge    = 0.85
	targetVsOldRate     = 1.00
	targetVsOldPeakRSS  = 2.5
	largeValue          = 512 // bytes: larger values are the "large" cells
	variantsAgainstNote = "each variant's figure over the first variant's in the same round"
)

// targetVsOld is the CPU-per-record target against the old binary in c.
func targetVsOld(c cell) float64 {
	if c.size > largeValue {
		return targetVsOldLarge
	}
	return targetVsOldSmall
}

func (m *matrix) figures(ci int, key string, f func(measured) float64) []float64 {
	var out []float64
	for _, r := range m.runs[ci][key] {
		out = append(out, f(r))
	}
	return out
}

func rate(r measured) float64    { return r.rate }
func cpuPerM(r measured) float64 { return r.cpuPerM }
func peakMB(r measured) float64  { return r.peakRSS / 1e6 }

func (m *matrix) has(key string) bool {
	for _, c := range m.cs {
		if c.key == key {
			return true
		}
	}
	return false
}

// write prints section 1's tables.
func (m *matrix) write(w io.Writer, o options) {
	fmt.Fprintf(w, "### Contenders\n\n")
	for _, c := range m.cs {
		fmt.Fprintf(w, "- `%s`: %s\n", c.key, c.name)
	}
	fmt.Fprintf(w, "\n%d rounds; each cell's topic is filled once (%d records of up to 512 B, %d of 1 KiB; keys are the record number, values random hex) and read from the start by a fresh group in every run. The figures cover the window from the first scrape of the process's metrics that sees a record sent to the moment all are (interpolated; scrapes every %v, the raw loop's every %v): process start, group join and shutdown are outside it. CPU is the process's (all threads, /proc). Peak RSS is the process's from its start to its last scrape (VmHWM). Every contender runs in the driver's environment (GOGC and GOMEMLIMIT unset there, the binaries and the baseline pick their own GC settings: internal/gctune); a variant adds its own.\n\n",
		o.rounds, o.records100, o.recordsLarge, scrapeBenthos, scrapeRaw)

	header := func(title string) {
		fmt.Fprintf(w, "%s\n\n| cell |", title)
		for _, c := range m.cs {
			fmt.Fprintf(w, " `%s` |", c.key)
		}
		fmt.Fprintf(w, "\n| --- |%s\n", strings.Repeat(" ---: |", len(m.cs)))
	}
	header("#### Records/s (thousands), median [min–max]")
	for ci, c := range m.cells {
		fmt.Fprintf(w, "| %s |", c)
		for _, ct := range m.cs {
			fmt.Fprintf(w, " %s |", kilo(spreadOf(m.figures(ci, ct.key, rate))))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	header("#### CPU seconds per million records, median [min–max]")
	for ci, c := range m.cells {
		fmt.Fprintf(w, "| %s |", c)
		for _, ct := range m.cs {
			fmt.Fprintf(w, " %s |", spreadOf(m.figures(ci, ct.key, cpuPerM)).format("%.2f"))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	header("#### Peak RSS (MB), median [min–max]")
	for ci, c := range m.cells {
		fmt.Fprintf(w, "| %s |", c)
		for _, ct := range m.cs {
			fmt.Fprintf(w, " %s |", spreadOf(m.figures(ci, ct.key, peakMB)).format("%.0f"))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)

	var cols []col
	for _, c := range []col{
		{"`wm` / `base` rec/s", "wm", "base", rate, atLeast(targetVsBaseline)},
		{"`wm-nometa` / `base` rec/s", "wm-nometa", "base", rate, atLeast(targetVsBaseline)},
		{"`wm` / `raw` rec/s", "wm", "raw", rate, nil},
		{"`base` / `raw` rec/s", "base", "raw", rate, nil},
		{"`wm` / `base` CPU per record", "wm", "base", cpuPerM, nil},
		{"`wm` / `wm-old` CPU per record", "wm", "wm-old", cpuPerM, func(c cell) float64 { return -targetVsOld(c) }},
		{"`wm-nometa` / `wm-old` CPU per record", "wm-nometa", "wm-old", cpuPerM, func(c cell) float64 { return -targetVsOld(c) }},
		{"`wm` / `wm-old` rec/s", "wm", "wm-old", rate, atLeast(targetVsOldRate)},
		{"`wm` / `wm-old` peak RSS", "wm", "wm-old", peakMB, atMost(targetVsOldPeakRSS)},
		{"`wm` / `wm-nopgo` CPU per record (PGO)", "wm", "wm-nopgo", cpuPerM, nil},
		{"`wm` / `wm-nopgo` rec/s (PGO)", "wm", "wm-nopgo", rate, nil},
		{"`wm-nopgo` / `wm-plain` CPU per record (GC settings)", "wm-nopgo", "wm-plain", cpuPerM, nil},
		{"`wm-nopgo` / `wm-plain` peak RSS (GC settings)", "wm-nopgo", "wm-plain", peakMB, nil},
	} {
		if m.has(c.a) && m.has(c.b) {
			cols = append(cols, c)
		}
	}
	m.writeRatios(w, "#### Ratios, paired round by round, median [min–max]", cols)
	if m.has("wm") && m.has("wm-old") {
		m.writeRounds(w, "`wm` / `wm-old` rec/s", "wm", "wm-old", rate)
		m.writeRounds(w, "`wm` / `wm-old` CPU per record", "wm", "wm-old", cpuPerM)
	}
	m.writeShares(w)
	m.writeVariants(w, o)
}

// col is one ratio column: a's figure over b's, paired round by round.
type col struct {
	title  string
	a, b   string
	f      func(measured) float64
	target func(cell) float64 // nil: none; > 0: at least; < 0: at most -target
}

func atLeast(t float64) func(cell) float64 { return func(cell) float64 { return t } }
func atMost(t float64) func(cell) float64  { return func(cell) float64 { return -t } }

// writeRatios prints a table of ratio columns with their targets, and how
// many cells met each.
func (m *matrix) writeRatios(w io.Writer, title string, cols []col) {
	if len(cols) == 0 {
		return
	}
	fmt.Fprintf(w, "%s\n\n| cell |", title)
	for _, c := range cols {
		fmt.Fprintf(w, " %s%s |", c.title, targetTitle(c, m.cells))
	}
	fmt.Fprintf(w, "\n| --- |%s\n", strings.Repeat(" ---: |", len(cols)))
	met := make([]int, len(cols))
	for ci, cl := range m.cells {
		fmt.Fprintf(w, "| %s |", cl)
		for i, c := range cols {
			s := spreadOf(ratios(m.figures(ci, c.a, c.f), m.figures(ci, c.b, c.f)))
			mark := ""
			if c.target != nil {
				t := c.target(cl)
				if (t > 0 && s.med >= t) || (t < 0 && s.med <= -t) {
					met[i]++
				} else if !math.IsNaN(s.med) {
					mark = " ✗"
				}
			}
			fmt.Fprintf(w, " %s%s |", s.format("%.2f"), mark)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for i, c := range cols {
		if c.target != nil {
			fmt.Fprintf(w, "- %s: target met (by the median) in %d of %d cells.\n", c.title, met[i], len(m.cells))
		}
	}
	fmt.Fprintln(w)
}

// targetTitle says a column's target in its title: one figure, or one per
// value size when they differ.
func targetTitle(c col, cells []cell) string {
	if c.target == nil {
		return ""
	}
	var parts []string
	seen := map[float64]bool{}
	for _, cl := range cells {
		t := c.target(cl)
		if seen[t] {
			continue
		}
		seen[t] = true
		op, v := "≥", t
		if t < 0 {
			op, v = "≤", -t
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", op, v))
	}
	if len(parts) > 1 {
		return fmt.Sprintf(" (target %s for values up to %d B, %s above)", parts[0], largeValue, parts[1])
	}
	return " (target " + parts[0] + ")"
}

// writeShares splits the gain of wm over wm-old into its parts when the
// variants that tell them apart ran: wm-plain (neither the GC settings nor
// PGO) over wm-old is what the code changed; wm-nopgo over wm-plain the GC
// settings; wm over wm-nopgo the profile. The three multiply to wm / wm-old
// (up to the pairing of rounds).
func (m *matrix) writeShares(w io.Writer) {
	for _, k := range []string{"wm", "wm-old", "wm-nopgo", "wm-plain"} {
		if !m.has(k) {
			return
		}
	}
	var cols []col
	for _, f := range []struct {
		name string
		f    func(measured) float64
	}{{"CPU per record", cpuPerM}, {"rec/s", rate}, {"peak RSS", peakMB}} {
		cols = append(cols,
			col{"code: `wm-plain` / `wm-old` " + f.name, "wm-plain", "wm-old", f.f, nil},
			col{"GC settings: `wm-nopgo` / `wm-plain` " + f.name, "wm-nopgo", "wm-plain", f.f, nil},
			col{"PGO: `wm` / `wm-nopgo` " + f.name, "wm", "wm-nopgo", f.f, nil},
			col{"all: `wm` / `wm-old` " + f.name, "wm", "wm-old", f.f, nil})
	}
	m.writeRatios(w, "#### Each part's share, paired round by round, median [min–max]", cols)
}

// writeVariants compares the gogc<N> variants and wm with the first
// variant given, round by round (a GC percent sweep).
func (m *matrix) writeVariants(w io.Writer, o options) {
	var keys []string
	for _, v := range o.variants {
		if strings.HasPrefix(v, variantGOGC) {
			keys = append(keys, "wm-"+v)
		}
	}
	if len(keys) < 2 {
		return
	}
	ref := keys[0]
	var cols []col
	for _, f := range []struct {
		name string
		f    func(measured) float64
	}{{"CPU per record", cpuPerM}, {"rec/s", rate}, {"peak RSS", peakMB}} {
		for _, k := range append(keys[1:], "wm") {
			if m.has(k) {
				cols = append(cols, col{fmt.Sprintf("`%s` / `%s` %s", k, ref, f.name), k, ref, f.f, nil})
			}
		}
	}
	m.writeRatios(w, "#### GC percent variants: "+variantsAgainstNote+", median [min–max]", cols)
}

// writeRounds prints the ratio a/b of f in each round of each cell: what
// the median and range above summarize, for a comparison whose spread
// matters (a refactoring against the commit before it).
func (m *matrix) writeRounds(w io.Writer, title, a, b string, f func(measured) float64) {
	fmt.Fprintf(w, "#### %s, round by round\n\n", title)
	for ci, cl := range m.cells {
		rs := ratios(m.figures(ci, a, f), m.figures(ci, b, f))
		parts := make([]string, len(rs))
		for i, r := range rs {
			parts[i] = fmt.Sprintf("%.2f", r)
		}
		fmt.Fprintf(w, "- %s: %s\n", cl, strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
}
