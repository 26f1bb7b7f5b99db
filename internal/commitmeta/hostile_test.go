package commitmeta

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// hostileInputs returns metadata of nearly MaxDecodeBytes built to make
// Decode work and allocate as much as it can: the most ranges per byte, the
// most distinct unknown keys per byte, and the longest number.
func hostileInputs() map[string]string {
	header := Prefix + "o=0 e=0 "
	ranges := header + "d=1.1" + strings.Repeat(",1.1", (MaxDecodeBytes-len(header)-5)/4)
	var keys strings.Builder
	keys.WriteString(header + "aaaa=")
	for i := 1; keys.Len() < MaxDecodeBytes-8; i++ {
		keys.WriteByte(' ')
		keys.WriteString(base26(i))
		keys.WriteByte('=')
	}
	number := Prefix + "o=" + strings.Repeat("9", MaxDecodeBytes-len(Prefix)-8) + " e=0"
	return map[string]string{"ranges": ranges, "keys": keys.String(), "number": number}
}

// base26 spells i in letters a-z, at least four of them.
func base26(i int) string {
	s := strconv.FormatInt(int64(i), 26)
	b := []byte(strings.Repeat("0", max(0, 4-len(s))) + s)
	for j, c := range b {
		if c <= '9' {
			b[j] = 'a' + c - '0'
		} else {
			b[j] = 'a' + 10 + c - 'a'
		}
	}
	return string(b)
}

// TestDecodeHostileInputIsBounded checks that the worst inputs within
// MaxDecodeBytes cost Decode at most a small multiple of their length in
// memory, and that one byte more is refused before any parsing.
func TestDecodeHostileInputIsBounded(t *testing.T) {
	for name, s := range hostileInputs() {
		if len(s) > MaxDecodeBytes {
			t.Fatalf("hostile input %s is %d bytes, want at most %d", name, len(s), MaxDecodeBytes)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, fields, err := DecodeFields(s)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > 5*uint64(len(s)) {
			t.Errorf("DecodeFields(%s: %d bytes) allocated %d bytes, want at most 5 times the input", name, len(s), got)
		}
		switch name {
		case "ranges":
			if err != nil || m.Records() != int64(len(m.Delivered)) || len(m.Delivered) < MaxDecodeBytes/5 {
				t.Errorf("DecodeFields(%s) = %d ranges, %d records, %v, want about %d ranges of one record", name, len(m.Delivered), m.Records(), err, MaxDecodeBytes/4)
			}
		case "keys":
			if !errors.Is(err, ErrTooManyFields) || fields != nil {
				t.Errorf("DecodeFields(%s) = %d fields, %v, want ErrTooManyFields", name, len(fields), err)
			}
		case "number":
			if !errors.Is(err, ErrOverflow) {
				t.Errorf("DecodeFields(%s) = %v, want ErrOverflow", name, err)
			}
		}
		if _, err := Decode(s + "x"); !errors.Is(err, ErrTooLong) && len(s) == MaxDecodeBytes {
			t.Errorf("Decode(%s + 1 byte) = %v, want ErrTooLong", name, err)
		}
	}
}
