package commitmeta

// SubtractRanges returns the parts of r that no range of any of sets
// covers, in order. Each set is sorted and disjoint. Pure: the engine
// (losses) and status (records below the log start) share it.
func SubtractRanges(r Range, sets ...[]Range) []Range {
	out := []Range{r}
	for _, set := range sets {
		for _, s := range set {
			var next []Range
			for _, o := range out {
				if s.To <= o.From || s.From >= o.To {
					next = append(next, o)
					continue
				}
				if s.From > o.From {
					next = append(next, Range{From: o.From, To: s.From})
				}
				if s.To < o.To {
					next = append(next, Range{From: s.To, To: o.To})
				}
			}
			out = next
		}
	}
	return out
}

// MergeRanges returns the union of two sorted, disjoint sets of ranges,
// sorted and disjoint, adjacent ranges merged.
func MergeRanges(a, b []Range) []Range {
	all := make([]Range, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var r Range
		if j >= len(b) || (i < len(a) && a[i].From <= b[j].From) {
			r, i = a[i], i+1
		} else {
			r, j = b[j], j+1
		}
		if n := len(all); n > 0 && all[n-1].To >= r.From {
			all[n-1].To = max(all[n-1].To, r.To)
			continue
		}
		all = append(all, r)
	}
	return all
}
