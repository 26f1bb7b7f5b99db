package share

// Cut splits a poll of records with the given sizes (bytes of key, value
// and headers) into batches of at most maxRecords records and maxBytes
// bytes, in order, and returns each batch's end index: the batches are
// [0, ends[0]), [ends[0], ends[1]), ... A record larger than maxBytes makes
// a batch of its own. maxRecords and maxBytes below 1 count as 1.
func Cut(sizes []int64, maxRecords int, maxBytes int64) []int {
	maxRecords, maxBytes = max(maxRecords, 1), max(maxBytes, 1)
	var ends []int
	start, size := 0, int64(0)
	for i, n := range sizes {
		if i > start && (i-start >= maxRecords || size+n > maxBytes) {
			ends = append(ends, i)
			start, size = i, 0
		}
		size += n
	}
	if len(sizes) > start {
		ends = append(ends, len(sizes))
	}
	return ends
}
