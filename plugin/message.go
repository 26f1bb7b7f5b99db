package plugin

import (
	"unsafe"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Metadata keys, named and typed as Redpanda Connect's redpanda input sets
// them (its FranzRecordToMessageV1), so pipelines port unchanged.
const (
	metaKey       = "kafka_key"               // []byte (nil for a null key)
	metaTopic     = "kafka_topic"             // string
	metaPartition = "kafka_partition"         // int
	metaOffset    = "kafka_offset"            // int
	metaLag       = "kafka_lag"               // int64
	metaTSUnix    = "kafka_timestamp_unix"    // int64, seconds
	metaTSMs      = "kafka_timestamp_ms"      // int64
	metaTombstone = "kafka_tombstone_message" // bool
	// metaHeaders holds every header of the record, in order and with
	// repeated keys, as []kgo.RecordHeader: Redpanda Connect's kafka
	// outputs read it to write the headers back unchanged. Set only for
	// records with headers.
	metaHeaders = "__rpcn_kafka_headers"
)

// RecordsToBatch converts records of one partition into a Benthos batch with
// Redpanda Connect's metadata. logEnd is the partition's log end when the
// records were fetched (its high watermark, or under read_committed its last
// stable offset), from which each message's kafka_lag is computed: the
// records after it in the log; -1 when unknown (kafka_lag is then 0).
//
// Each header is set under its own key, as a string (nil for a null value;
// for a repeated key the last one wins), after the kafka_* keys.
//
// Setting metadata is most of the cost of this function, and most of that
// is allocation: Benthos gives every message a map of its own, and every
// number or slice put in an interface is one more allocation. So the values
// that are the same for every record of a partition (topic, partition) are
// boxed once per batch, and the per-record ones (key, offset, timestamps,
// lag) and the service.Message wrappers live in arrays made once per batch
// (see batchValues): per record, what is left is Benthos's own part, its
// data and its metadata map. It is safe for concurrent use on distinct
// slices.
func RecordsToBatch(records []*kgo.Record, logEnd int64) service.MessageBatch {
	n := len(records)
	batch := make(service.MessageBatch, n)
	if n == 0 {
		return batch
	}
	var topic, partition any = records[0].Topic, int(records[0].Partition)
	// Benthos unwraps each message into its internal part as soon as
	// ReadBatch returns, so the wrappers are garbage from then on: one
	// array holds them all. NewMessage is inlined, so copying its result
	// allocates nothing of its own.
	msgs := make([]service.Message, n)
	vals := newBatchValues(n)
	for i, r := range records {
		msgs[i] = *service.NewMessage(r.Value)
		m := &msgs[i]
		m.MetaSetMut(metaKey, vals.key(i, r.Key))
		m.MetaSetMut(metaTopic, topic)
		m.MetaSetMut(metaPartition, partition)
		m.MetaSetMut(metaOffset, vals.offset(i, int(r.Offset)))
		m.MetaSetMut(metaTSUnix, vals.int64(3*i, r.Timestamp.Unix()))
		m.MetaSetMut(metaTSMs, vals.int64(3*i+1, r.Timestamp.UnixMilli()))
		m.MetaSetMut(metaTombstone, r.Value == nil) // a bool boxes without allocating
		if len(r.Headers) > 0 {
			for _, h := range r.Headers {
				if h.Value == nil {
					m.MetaSetMut(h.Key, nil)
				} else {
					m.MetaSetMut(h.Key, string(h.Value))
				}
			}
			m.MetaSetMut(metaHeaders, r.Headers)
		}
		m.MetaSetMut(metaLag, vals.int64(3*i+2, max(logEnd-r.Offset-1, 0)))
		batch[i] = m
	}
	return batch
}

// batchValues holds one batch's per-record metadata values, one array per
// type, and hands out interfaces that point into them. Converting an int or
// a slice to an interface allocates a copy of it, five per record here; with
// these arrays a batch costs three allocations for all of them.
//
// Sharing is safe because an interface's value is immutable: each element
// is written once, before the interface that points to it is made, and
// never again, and nothing can write through an interface. An interface
// into an array keeps the whole array alive, so a message that a pipeline
// keeps keeps its batch's values (56 bytes a record) in memory with it.
// Not safe for concurrent use; RecordsToBatch makes one per call.
type batchValues struct {
	keys    [][]byte
	offsets []int
	int64s  []int64 // per record: timestamp (s), timestamp (ms), lag
}

func newBatchValues(n int) batchValues {
	return batchValues{keys: make([][]byte, n), offsets: make([]int, n), int64s: make([]int64, 3*n)}
}

func (v *batchValues) key(i int, k []byte) any {
	v.keys[i] = k
	return boxAt(bytesType, unsafe.Pointer(&v.keys[i]))
}

func (v *batchValues) offset(i int, o int) any {
	v.offsets[i] = o
	return boxAt(intType, unsafe.Pointer(&v.offsets[i]))
}

func (v *batchValues) int64(i int, x int64) any {
	v.int64s[i] = x
	return boxAt(int64Type, unsafe.Pointer(&v.int64s[i]))
}

// eface is the layout of an empty interface, as the runtime and reflect
// have it: the dynamic type, and for a type that is not pointer-shaped (as
// none of these is) a pointer to the value.
type eface struct {
	typ, data unsafe.Pointer
}

// The dynamic types batchValues hands out, taken from zero values, which
// box without allocating.
var (
	bytesType = typeOf([]byte(nil))
	intType   = typeOf(int(0))
	int64Type = typeOf(int64(0))
)

func typeOf(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

// boxAt returns an interface of dynamic type typ whose value is the one at
// p, not a copy: p must point to a value of that type that is never written
// again.
func boxAt(typ, p unsafe.Pointer) any {
	var v any
	*(*eface)(unsafe.Pointer(&v)) = eface{typ, p}
	return v
}
