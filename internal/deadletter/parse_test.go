package deadletter

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// with returns a valid dead letter with header key's value set to v (nil:
// removed), or, when add is true, with a second key=v appended.
func with(key string, v []byte, add bool) *kgo.Record {
	l := Letter(origin(), "dlq", testF)
	if add {
		l.Headers = append(l.Headers, kgo.RecordHeader{Key: key, Value: v})
		return l
	}
	var hs []kgo.RecordHeader
	for _, h := range l.Headers {
		switch {
		case h.Key != key:
			hs = append(hs, h)
		case v != nil:
			hs = append(hs, kgo.RecordHeader{Key: key, Value: v})
		}
	}
	l.Headers = hs
	return l
}

// twice returns a valid dead letter with key=v appended twice.
func twice(key, v string) *kgo.Record {
	l := with(key, []byte(v), true)
	l.Headers = append(l.Headers, kgo.RecordHeader{Key: key, Value: []byte(v)})
	return l
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      *kgo.Record
		sentry error
		msg    string
	}{
		{"no headers", &kgo.Record{}, ErrMissingHeader, "header dead_letter_topic: missing"},
		{"missing member", with(HeaderMember, nil, false), ErrMissingHeader, "header dead_letter_member: missing"},
		{"duplicate offset", with(HeaderOffset, []byte("7"), true), ErrDuplicateHeader, `header dead_letter_offset: appears more than once ("7")`},
		{"duplicate redriven_from", twice(HeaderRedrivenFrom, "a/0/1"), ErrDuplicateHeader, `header dead_letter_redriven_from: appears more than once ("a/0/1")`},
		{"empty topic", with(HeaderTopic, []byte{}, false), ErrInvalidValue, `header dead_letter_topic: invalid value "": want a Kafka topic name`},
		{"topic with a slash", with(HeaderTopic, []byte("a/b"), false), ErrInvalidValue, `invalid value "a/b"`},
		{"topic ..", with(HeaderTopic, []byte(".."), false), ErrInvalidValue, `invalid value ".."`},
		{"topic too long", with(HeaderTopic, []byte(strings.Repeat("a", 250)), false), ErrInvalidValue, `... (250 bytes): want`},
		{"negative partition", with(HeaderPartition, []byte("-1"), false), ErrInvalidValue, `header dead_letter_partition: invalid value "-1": want a decimal partition number`},
		{"partition past int32", with(HeaderPartition, []byte("2147483648"), false), ErrInvalidValue, `"2147483648"`},
		{"offset with a plus", with(HeaderOffset, []byte("+5"), false), ErrInvalidValue, `header dead_letter_offset: invalid value "+5"`},
		{"offset past int64", with(HeaderOffset, []byte("9223372036854775808"), false), ErrInvalidValue, `"9223372036854775808"`},
		{"offset with a space", with(HeaderOffset, []byte(" 5"), false), ErrInvalidValue, `" 5"`},
		{"timestamp just a minus", with(HeaderTimestampMs, []byte("-"), false), ErrInvalidValue, `header dead_letter_timestamp_ms: invalid value "-"`},
		{"zero attempts", with(HeaderAttempts, []byte("0"), false), ErrInvalidValue, `header dead_letter_attempts: invalid value "0": want a decimal count, 1 to`},
		{"first failed hex", with(HeaderFirstFailedMs, []byte("0x10"), false), ErrInvalidValue, `header dead_letter_first_failed_ms: invalid value "0x10"`},
		{"empty share group", with(HeaderShareGroup, []byte{}, true), ErrInvalidValue, `header dead_letter_share_group: invalid value "": want a share group name, 1 to 32767 bytes`},
		{"share group too long", with(HeaderShareGroup, []byte(strings.Repeat("g", 1<<15)), true), ErrInvalidValue, `"... (32768 bytes): want a share group name`},
		{"duplicate share group", twice(HeaderShareGroup, "workers"), ErrDuplicateHeader, `header dead_letter_share_group: appears more than once ("workers")`},
		{"share group empty and offset bad: the eight are checked first", func() *kgo.Record {
			r := with(HeaderOffset, []byte("x"), false)
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: HeaderShareGroup})
			return r
		}(), ErrInvalidValue, `header dead_letter_offset: invalid value "x"`},
		{"binary, long", with(HeaderOffset, []byte(strings.Repeat("\xff", 1000)), false), ErrInvalidValue, `"... (1000 bytes): want`},
	} {
		p, err := Parse(tc.r)
		require.Error(t, err, tc.name)
		assert.ErrorIs(t, err, tc.sentry, tc.name)
		var pe *ProvenanceError
		assert.True(t, errors.As(err, &pe), "%s: %T is a *ProvenanceError", tc.name, err)
		assert.Contains(t, err.Error(), tc.msg, "%s: Parse error = got, want a part", tc.name)
		assert.LessOrEqual(t, len(err.Error()), 400, "%s: the message quotes a bounded part of the value", tc.name)
		assert.Equal(t, Provenance{}, p, tc.name)
	}
}

func TestParseAccepts(t *testing.T) {
	// Unknown dead_letter_ headers are room for later ones; other headers
	// are the origin's.
	r := with("dead_letter_later", []byte("x"), true)
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: HeaderRedrivenFrom, Value: []byte("dlq/1/2")})
	p, err := Parse(r)
	require.NoError(t, err)
	assert.Equal(t, "dlq/1/2", p.RedrivenFrom)
	assert.Equal(t, "orders", p.Topic)
	assert.Equal(t, testTime, p.Timestamp)

	p, err = Parse(with(HeaderTimestampMs, []byte("-1"), false))
	require.NoError(t, err, "a record without a timestamp has -1")
	assert.Equal(t, int64(-1), p.Timestamp.UnixMilli())
}
