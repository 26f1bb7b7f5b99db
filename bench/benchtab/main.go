// Command benchtab turns the output of interleaved `go test -bench` rounds
// into a markdown table: for each benchmark and metric, the median and the
// range of every contender, and, when there are two or more, the median and
// range of each contender's per-round ratio to the first.
//
// Each input line is a benchmark result prefixed by its contender's name:
//
//	after BenchmarkCommitCycle/moved=1-2  287254  4226 ns/op  19 allocs/op
//
// Rounds pair up by order: the i-th result of a benchmark for one contender
// and the i-th for another come from the same round, so a round's ratio
// compares two runs made side by side. Lines that are not results are
// ignored.
//
//	go run ./bench/benchtab -units ns/op,allocs/op < rounds.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var procs = regexp.MustCompile(`-\d+$`)

type series struct {
	contenders []string
	units      []string
	values     map[string]map[string][]float64 // unit, contender
}

func main() {
	units := flag.String("units", "", "comma-separated metrics to show, in this order (default: all, as they come)")
	trim := flag.String("trim", "", "a prefix to drop from benchmark names")
	base := flag.String("base", "", "the contender the others are compared to (default: the first one met)")
	flag.Parse()
	var want []string
	if *units != "" {
		want = strings.Split(*units, ",")
	}
	var names []string
	all := map[string]*series{}
	var contenders []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || !strings.HasPrefix(f[1], "Benchmark") {
			continue
		}
		who, name := f[0], strings.TrimPrefix(procs.ReplaceAllString(f[1], ""), *trim)
		if !slices.Contains(contenders, who) {
			contenders = append(contenders, who)
		}
		s := all[name]
		if s == nil {
			s = &series{values: map[string]map[string][]float64{}}
			all[name] = s
			names = append(names, name)
		}
		if !slices.Contains(s.contenders, who) {
			s.contenders = append(s.contenders, who)
		}
		for i := 3; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			unit := f[i+1]
			if want != nil && !slices.Contains(want, unit) {
				continue
			}
			if s.values[unit] == nil {
				s.values[unit] = map[string][]float64{}
				s.units = append(s.units, unit)
			}
			s.values[unit][who] = append(s.values[unit][who], v)
		}
	}
	if i := slices.Index(contenders, *base); i > 0 {
		contenders = append([]string{*base}, slices.Delete(contenders, i, i+1)...)
	}
	if len(names) == 0 {
		fmt.Println("(no benchmark results)")
		return
	}
	head := "| benchmark | metric |"
	rule := "| --- | --- |"
	for _, c := range contenders {
		head += " " + c + " |"
		rule += " ---: |"
	}
	for _, c := range contenders[1:] {
		head += " " + c + " / " + contenders[0] + " |"
		rule += " ---: |"
	}
	fmt.Println(head)
	fmt.Println(rule)
	for _, name := range names {
		s := all[name]
		order := s.units
		if want != nil {
			order = nil
			for _, u := range want {
				if s.values[u] != nil {
					order = append(order, u)
				}
			}
		}
		for _, unit := range order {
			row := fmt.Sprintf("| %s | %s |", name, unit)
			vs := s.values[unit]
			for _, c := range contenders {
				row += " " + summary(vs[c], 1) + " |"
			}
			for _, c := range contenders[1:] {
				var ratios []float64
				for i := 0; i < len(vs[c]) && i < len(vs[contenders[0]]); i++ {
					if base := vs[contenders[0]][i]; base != 0 {
						ratios = append(ratios, vs[c][i]/base)
					}
				}
				row += " " + summary(ratios, 0) + " |"
			}
			fmt.Println(row)
		}
	}
	fmt.Printf("\n%d round(s); median [min–max]; a ratio is the median [min–max] of the per-round ratios.\n", rounds(all))
}

// summary formats the median and range of xs; unit 0 marks a ratio.
func summary(xs []float64, unit int) string {
	if len(xs) == 0 {
		return "–"
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	if unit == 0 {
		return fmt.Sprintf("%.3g× [%.3g–%.3g]", med, s[0], s[len(s)-1])
	}
	if len(s) == 1 {
		return num(med)
	}
	return fmt.Sprintf("%s [%s–%s]", num(med), num(s[0]), num(s[len(s)-1]))
}

func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func rounds(all map[string]*series) int {
	n := 0
	for _, s := range all {
		for _, vs := range s.values {
			for _, v := range vs {
				n = max(n, len(v))
			}
		}
	}
	return n
}
