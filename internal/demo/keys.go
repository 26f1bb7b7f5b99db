package demo

import (
	"fmt"
	"strconv"
)

// With --ordering key the demo's input runs with ordering: key, on records
// that carry a few keys per partition, so that a key's records meet in the
// input and the sink. The records' layout, the options and their checks are
// here; what the sink checks of each key is in keycheck.go, and what the
// demo tells of it in keystory.go.

// The input's ordering values (its `ordering` field).
const (
	orderingNone = "none"
	orderingKey  = "key"
)

// keysPerPartition is the key space under --ordering key without --keys:
// few enough that a batch holds a whole key's run of records and a failed
// batch holds one or two keys, enough that most of the partition is other
// keys, free to flow past it.
const keysPerPartition = 4

// keyOrdered reports whether the input runs with ordering: key.
func (o demoOptions) keyOrdered() bool { return o.Ordering == orderingKey }

// keySpace is how many keys the records carry, 0 when every record has its
// own (the demo before --ordering: no key is ever met twice).
func (o demoOptions) keySpace() int {
	if o.Keys == 0 && o.keyOrdered() {
		return keysPerPartition * o.Partitions
	}
	return o.Keys
}

// orderingYAML is the input's ordering field, empty under none so that the
// default pipeline is the one it was.
func (o demoOptions) orderingYAML() string {
	if !o.keyOrdered() {
		return ""
	}
	return `
    # A record never goes out while an earlier record of its key is in a
    # batch not yet delivered; a failed batch holds back only its keys.
    ordering: key`
}

// keysHead is what the heading says of keys: nothing when every record
// has its own key.
func (o demoOptions) keysHead() string {
	if o.keySpace() == 0 {
		return ""
	}
	return fmt.Sprintf(", ordering: %s, %d keys", o.Ordering, o.keySpace())
}

// validateKeys checks --ordering and --keys, and what they combine with.
func (o demoOptions) validateKeys() []error {
	var errs []error
	switch o.Ordering {
	case "", orderingNone, orderingKey:
	default:
		errs = append(errs, fmt.Errorf("--ordering must be one of %s, %s; got %q", orderingNone, orderingKey, o.Ordering))
	}
	switch {
	case o.Keys < 0:
		errs = append(errs, fmt.Errorf("--keys must be at least 0 (0: %d per partition under --ordering key, else one per record), got %d",
			keysPerPartition, o.Keys))
	case o.Keys > 0 && o.Keys < o.Partitions:
		// Keys are spread over partitions as a partitioner would (keyed):
		// with fewer keys than partitions some would stay empty.
		errs = append(errs, fmt.Errorf("--keys %d leaves partitions without records: with --partitions %d it must be at least %d",
			o.Keys, o.Partitions, o.Partitions))
	}
	return errs
}

// keyed places record i of a keyed run: its key is one of keys, and a key
// lives in one partition, as with a hashing partitioner (key k in
// partition k mod partitions). With keys a multiple of partitions, record
// i lands in partition i mod partitions, as in a run without keys.
func keyed(i, keys int, partitions int32) (partition int32, key []byte) {
	k := i % keys
	return int32(k % int(partitions)), strconv.AppendInt([]byte("k"), int64(k), 10)
}
