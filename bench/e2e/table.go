package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Targets of the issue: kafka_watermark keeps at least 95% of the baseline's
// records/s in every cell, and spends at most 80% of the old binary's CPU per
// record.
const (
	targetVsBaseline = 0.95
	targetVsOld      = 0.80
)

func (m *matrix) figures(ci int, key string, f func(measured) float64) []float64 {
	var out []float64
	for _, r := range m.runs[ci][key] {
		out = append(out, f(r))
	}
	return out
}

func rate(r measured) float64    { return r.rate }
func cpuPerM(r measured) float64 { return r.cpuPerM }

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
	fmt.Fprintf(w, "\n%d rounds; each cell's topic is filled once (%d records of up to 512 B, %d of 1 KiB; keys are the record number, values random hex) and read from the start by a fresh group in every run. The figures cover the window from the first scrape of the process's metrics that sees a record sent to the moment all are (interpolated; scrapes every %v, the raw loop's every %v): process start, group join and shutdown are outside it. CPU is the process's (all threads, /proc).\n\n",
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

	type col struct {
		title  string
		a, b   string
		f      func(measured) float64
		target float64 // 0: none; > 0: at least; < 0: at most -target
	}
	cols := []col{
		{"`wm` / `base` rec/s", "wm", "base", rate, targetVsBaseline},
		{"`wm-nometa` / `base` rec/s", "wm-nometa", "base", rate, targetVsBaseline},
		{"`wm` / `raw` rec/s", "wm", "raw", rate, 0},
		{"`base` / `raw` rec/s", "base", "raw", rate, 0},
		{"`wm` / `base` CPU per record", "wm", "base", cpuPerM, 0},
	}
	if m.has("wm-old") {
		cols = append(cols,
			col{"`wm` / `wm-old` CPU per record", "wm", "wm-old", cpuPerM, -targetVsOld},
			col{"`wm-nometa` / `wm-old` CPU per record", "wm-nometa", "wm-old", cpuPerM, -targetVsOld},
			col{"`wm` / `wm-old` rec/s", "wm", "wm-old", rate, 0})
	}
	fmt.Fprintf(w, "#### Ratios, paired round by round, median [min–max]\n\n| cell |")
	for _, c := range cols {
		t := ""
		switch {
		case c.target > 0:
			t = fmt.Sprintf(" (target ≥ %.2f)", c.target)
		case c.target < 0:
			t = fmt.Sprintf(" (target ≤ %.2f)", -c.target)
		}
		fmt.Fprintf(w, " %s%s |", c.title, t)
	}
	fmt.Fprintf(w, "\n| --- |%s\n", strings.Repeat(" ---: |", len(cols)))
	met := make([]int, len(cols))
	for ci, cl := range m.cells {
		fmt.Fprintf(w, "| %s |", cl)
		for i, c := range cols {
			s := spreadOf(ratios(m.figures(ci, c.a, c.f), m.figures(ci, c.b, c.f)))
			mark := ""
			if (c.target > 0 && s.med >= c.target) || (c.target < 0 && s.med <= -c.target) {
				met[i]++
			} else if c.target != 0 && !math.IsNaN(s.med) {
				mark = " ✗"
			}
			fmt.Fprintf(w, " %s%s |", s.format("%.2f"), mark)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for i, c := range cols {
		if c.target != 0 {
			fmt.Fprintf(w, "- %s: target met (by the median) in %d of %d cells.\n", c.title, met[i], len(m.cells))
		}
	}
	fmt.Fprintln(w)
	if m.has("wm-old") {
		m.writeRounds(w, cols[len(cols)-1].title, "wm", "wm-old", rate)
		m.writeRounds(w, cols[len(cols)-3].title, "wm", "wm-old", cpuPerM)
	}
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
