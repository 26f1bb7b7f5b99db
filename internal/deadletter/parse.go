package deadletter

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Provenance is what Parse reads back from a dead-letter record.
//
// Guarantees of a parsed value: Topic is a legal Kafka topic name,
// Partition and Offset are >= 0, Attempts is >= 1, the times are in UTC.
// Error, Member, RedrivenFrom and ShareGroup are the headers' bytes as they
// are (any bytes: print them quoted); ShareGroup, when set, is 1 to 32767
// bytes.
type Provenance struct {
	Topic        string    // the origin topic
	Partition    int32     // the origin partition
	Offset       int64     // the origin offset
	Timestamp    time.Time // the origin record's timestamp, to the millisecond
	Attempts     int       // failed deliveries before it was dead-lettered
	Error        string    // the error class of the last failure
	FirstFailed  time.Time // when its first delivery failed, to the millisecond
	Member       string    // who dead-lettered it: client ID @ host
	RedrivenFrom string    // "" unless the record was redriven: "<dlq topic>/<partition>/<offset>"
	ShareGroup   string    // "" unless a kafka_share input wrote it: its share group
}

// Errors a *ProvenanceError carries in its Err, for errors.Is.
var (
	ErrMissingHeader   = errors.New("missing")                // one of the eight provenance headers is absent
	ErrDuplicateHeader = errors.New("appears more than once") // a provenance header appears twice or more
	ErrInvalidValue    = errors.New("invalid value")          // a header's value does not parse
)

// ProvenanceError is a record whose provenance does not parse: which header,
// its value, and what is wrong. A value once returned, safe for concurrent
// use.
type ProvenanceError struct {
	Header string // the header's key
	Value  []byte // the offending value (the later one of a duplicate); nil when missing
	Err    error  // ErrMissingHeader, ErrDuplicateHeader or ErrInvalidValue
	Want   string // with ErrInvalidValue: what a valid value is
}

// maxQuoted bounds how much of a value an error message quotes: a header
// value can be megabytes.
const maxQuoted = 64

func (e *ProvenanceError) Error() string {
	switch {
	case errors.Is(e.Err, ErrMissingHeader):
		return fmt.Sprintf("header %s: missing", e.Header)
	case e.Want != "":
		return fmt.Sprintf("header %s: %v %s: want %s", e.Header, e.Err, quote(e.Value), e.Want)
	}
	return fmt.Sprintf("header %s: %v (%s)", e.Header, e.Err, quote(e.Value))
}

// Unwrap returns Err, so that errors.Is(err, ErrMissingHeader) works.
func (e *ProvenanceError) Unwrap() error { return e.Err }

// quote quotes at most maxQuoted bytes of v, and says how long v was when
// it cut it.
func quote(v []byte) string {
	if len(v) <= maxQuoted {
		return strconv.Quote(string(v))
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(string(v[:maxQuoted])), len(v))
}

// The provenance headers in the order Letter writes them, which is the order
// Parse checks them in: its error names the first one that is wrong.
var provenanceOrder = [...]string{
	HeaderTopic, HeaderPartition, HeaderOffset, HeaderTimestampMs,
	HeaderAttempts, HeaderError, HeaderFirstFailedMs, HeaderMember,
}

// Parse reads r's provenance headers; its error names the header and the bad value (a record missing any of the eight is an error).
//
// The error is a *ProvenanceError. HeaderRedrivenFrom and HeaderShareGroup
// are optional (an empty share group is an invalid value); any other
// dead_letter_ header is ignored (room for later ones). A provenance header
// that appears twice is an error: which one counts would be a guess.
func Parse(r *kgo.Record) (Provenance, error) {
	var values [len(provenanceOrder)][]byte
	var seen [len(provenanceOrder)]bool
	var redriven, shareGroup []byte
	var redrivenSeen, shareGroupSeen bool
	for _, h := range r.Headers {
		if !isOurs(h.Key) {
			continue
		}
		switch h.Key {
		case HeaderRedrivenFrom, HeaderShareGroup:
			dst, dstSeen := &redriven, &redrivenSeen
			if h.Key == HeaderShareGroup {
				dst, dstSeen = &shareGroup, &shareGroupSeen
			}
			if *dstSeen {
				return Provenance{}, &ProvenanceError{Header: h.Key, Value: h.Value, Err: ErrDuplicateHeader}
			}
			*dst, *dstSeen = h.Value, true
			continue
		}
		for i, key := range provenanceOrder {
			if h.Key != key {
				continue
			}
			if seen[i] {
				return Provenance{}, &ProvenanceError{Header: h.Key, Value: h.Value, Err: ErrDuplicateHeader}
			}
			values[i], seen[i] = h.Value, true
			break
		}
	}
	for i, key := range provenanceOrder {
		if !seen[i] {
			return Provenance{}, &ProvenanceError{Header: key, Err: ErrMissingHeader}
		}
	}

	p := Provenance{
		Error:        string(values[5]),
		Member:       string(values[7]),
		RedrivenFrom: string(redriven),
		ShareGroup:   string(shareGroup),
	}
	var err error
	if p.Topic, err = topicName(values[0]); err != nil {
		return Provenance{}, err
	}
	partition, err := decimal(HeaderPartition, values[1], 0, 1<<31-1, "a decimal partition number, 0 to 2147483647")
	if err != nil {
		return Provenance{}, err
	}
	p.Partition = int32(partition)
	if p.Offset, err = decimal(HeaderOffset, values[2], 0, 1<<63-1, "a decimal offset >= 0"); err != nil {
		return Provenance{}, err
	}
	ms, err := decimal(HeaderTimestampMs, values[3], -1<<63, 1<<63-1, "decimal Unix milliseconds")
	if err != nil {
		return Provenance{}, err
	}
	p.Timestamp = time.UnixMilli(ms).UTC()
	attempts, err := decimal(HeaderAttempts, values[4], 1, maxInt, fmt.Sprintf("a decimal count, 1 to %d", maxInt))
	if err != nil {
		return Provenance{}, err
	}
	p.Attempts = int(attempts)
	if ms, err = decimal(HeaderFirstFailedMs, values[6], -1<<63, 1<<63-1, "decimal Unix milliseconds"); err != nil {
		return Provenance{}, err
	}
	p.FirstFailed = time.UnixMilli(ms).UTC()
	if shareGroupSeen && (len(shareGroup) == 0 || len(shareGroup) > maxShareGroupLen) {
		return Provenance{}, &ProvenanceError{Header: HeaderShareGroup, Value: shareGroup, Err: ErrInvalidValue, Want: "a share group name, 1 to 32767 bytes"}
	}
	return p, nil
}

// maxInt is the largest int, as an int64.
const maxInt = int64(^uint(0) >> 1)

// decimal parses v as a decimal integer in [lo, hi]: ASCII digits, with a
// '-' first only when lo is negative; no '+', no space.
func decimal(header string, v []byte, lo, hi int64, want string) (int64, error) {
	bad := func() (int64, error) {
		return 0, &ProvenanceError{Header: header, Value: v, Err: ErrInvalidValue, Want: want}
	}
	digits := v
	if lo < 0 && len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 19 {
		return bad()
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return bad()
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < lo || n > hi {
		return bad()
	}
	return n, nil
}

// topicName checks that v is a legal Kafka topic name (1 to 249 of
// [a-zA-Z0-9._-], not "." or ".."): redrive produces to it.
func topicName(v []byte) (string, error) {
	const want = "a Kafka topic name: 1 to 249 of a-z, A-Z, 0-9, '.', '_', '-'"
	bad := &ProvenanceError{Header: HeaderTopic, Value: v, Err: ErrInvalidValue, Want: want}
	if len(v) == 0 || len(v) > 249 || string(v) == "." || string(v) == ".." {
		return "", bad
	}
	for _, c := range v {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return "", bad
		}
	}
	return string(v), nil
}
