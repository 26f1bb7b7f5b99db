package commitmeta

import (
	"errors"
	"testing"
)

// FuzzStallFromFields feeds StallFromFields arbitrary values for the six
// keys, each present or not (a bit of present), as anyone who can commit to
// the group may write them, and checks:
//   - it never panics;
//   - without sf the result is zero, false, nil;
//   - an error is a stall *ReportError naming one of the six keys, with a zero
//     Stall and ok false;
//   - sf alone is the mark, and only then: MarkOnly is set exactly when no
//     other of the six keys is present;
//   - a Stall it returns keeps every bound: 0 <= First <= Last, Since >= 0,
//     1 <= Attempts <= MaxInt32, Reason and Member printable ASCII within
//     MaxReasonLen and MaxMemberLen; a mark has 0 <= First and every other
//     field zero;
//   - its Fields are at most MaxStallFieldsLen bytes (a mark's at most
//     MaxStallMarkLen), form valid extra fields for Encode, and read back
//     to the same Stall: a second round trip is a fixed point.
func FuzzStallFromFields(f *testing.F) {
	f.Add("1200", "1209", "1767225600000", "3", "orders-sink%40pod-7", "http+503", uint8(63))
	f.Add("0", "0", "0", "1", "", "", uint8(63))
	f.Add("9223372036854775807", "9223372036854775807", "9223372036854775807", "2147483647", "m", "a%2Bb", uint8(63))
	f.Add("10", "9", "1", "1", "a", "b", uint8(63))
	f.Add("1", "2", "3", "0", "a", "b", uint8(63))
	f.Add("1", "2", "3", "4", "%zz", "b", uint8(63))
	f.Add("1", "2", "3", "4", "a b", "caf%C3%A9", uint8(63))
	f.Add("1", "2", "3", "4", "a", "b", uint8(1))
	f.Add("", "", "", "", "", "", uint8(62))
	f.Add("9223372036854775807", "", "", "", "", "", uint8(1))
	f.Add("01", "", "", "", "", "", uint8(1))
	f.Add("-1", "", "", "", "", "", uint8(1))
	f.Add("1200", "1209", "", "", "", "", uint8(3))
	f.Add("1200", "", "", "", "", "", uint8(33))
	f.Fuzz(func(t *testing.T, sf, sl, ss, sa, sm, sr string, present uint8) {
		fields := map[string]string{}
		for i, kv := range [][2]string{{"sf", sf}, {"sl", sl}, {"ss", ss}, {"sa", sa}, {"sm", sm}, {"sr", sr}} {
			if present&(1<<i) != 0 {
				fields[kv[0]] = kv[1]
			}
		}
		s, ok, err := StallFromFields(fields)
		if _, has := fields["sf"]; !has {
			if ok || err != nil || !sameStall(s, Stall{}) {
				t.Fatalf("StallFromFields(%q) = %+v, %v, %v without sf, want zero, false, nil", fields, s, ok, err)
			}
			return
		}
		if err != nil {
			var se *ReportError
			if ok || !sameStall(s, Stall{}) || !errors.As(err, &se) || se.Kind != KindStall {
				t.Fatalf("StallFromFields(%q) = %+v, %v, %v, want zero, false and a stall *ReportError", fields, s, ok, err)
			}
			if _, known := map[string]bool{"sf": true, "sl": true, "ss": true, "sa": true, "sm": true, "sr": true}[se.Key]; !known {
				t.Fatalf("StallFromFields(%q) error names key %q", fields, se.Key)
			}
			return
		}
		if !ok {
			t.Fatalf("StallFromFields(%q) = %+v, false, nil with sf present", fields, s)
		}
		if s.MarkOnly != (len(fields) == 1) {
			t.Fatalf("StallFromFields(%q) = %+v: MarkOnly %v with %d of the six keys", fields, s, s.MarkOnly, len(fields))
		}
		if s.MarkOnly {
			if s.First < 0 || !sameStall(s, Stall{Report: Report{First: s.First}, MarkOnly: true}) || !s.Since.IsZero() {
				t.Fatalf("StallFromFields(%q) = %+v, want a mark: First >= 0 and every other field zero", fields, s)
			}
			if enc := s.Fields(); len(enc) > MaxStallMarkLen || enc != "sf="+fields["sf"] {
				t.Fatalf("Fields of the mark %+v = %q, want %q within MaxStallMarkLen", s, enc, "sf="+fields["sf"])
			}
		} else if s.First < 0 || s.Last < s.First || s.Since.UnixMilli() < 0 || s.Attempts < 1 || s.Attempts > 1<<31-1 ||
			len(s.Reason) > MaxReasonLen || len(s.Member) > MaxMemberLen ||
			printable(s.Reason, MaxReasonLen) != s.Reason || printable(s.Member, MaxMemberLen) != s.Member {
			t.Fatalf("StallFromFields(%q) = %+v, which breaks a bound", fields, s)
		}
		enc := s.Fields()
		if len(enc) > MaxStallFieldsLen {
			t.Fatalf("Fields of %+v is %d bytes, above MaxStallFieldsLen", s, len(enc))
		}
		if err := checkExtra(enc); err != nil {
			t.Fatalf("Fields of %+v = %q, not valid extra fields: %v", s, enc, err)
		}
		back, ok, err := stallBack(t, enc)
		if err != nil || !ok || !sameStall(back, s) || back.Fields() != enc {
			t.Fatalf("StallFromFields(Fields of %+v = %q) = %+v, %v, %v, want the same Stall", s, enc, back, ok, err)
		}
	})
}
