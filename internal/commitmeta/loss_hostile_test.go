package commitmeta

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestLossHostileInputIsBounded reads loss reports built to cost as much as
// they can: metadata of nearly MaxDecodeBytes whose lf, ll, ln, ls or lc is
// one huge value, a huge valid-looking number, and every other l field valid.
// LossFromFields must refuse each without panicking, with a clipped message,
// and at a cost that does not grow with the value: it allocates at most a
// few hundred bytes (the error) whatever the input's length.
func TestLossHostileInputIsBounded(t *testing.T) {
	valid := map[string]string{"lf": "100", "ll": "1499", "ln": "1100", "ls": "1767225600000", "lc": "retention"}
	header := Prefix + "o=0 e=0"
	for _, key := range []string{"lf", "ll", "ln", "ls", "lc"} {
		for _, fill := range []string{"9", "x", "0"} {
			var b strings.Builder
			b.WriteString(header)
			for _, k := range []string{"lf", "ll", "ln", "ls", "lc"} {
				if k != key {
					b.WriteString(" " + k + "=" + valid[k])
				}
			}
			b.WriteString(" " + key + "=")
			b.WriteString(strings.Repeat(fill, MaxDecodeBytes-b.Len()))
			s := b.String()
			if len(s) != MaxDecodeBytes {
				t.Fatalf("hostile input %s=%s... is %d bytes, want %d", key, fill, len(s), MaxDecodeBytes)
			}
			_, fields, err := DecodeFields(s)
			if err != nil {
				t.Fatalf("DecodeFields(%s=%s...) = %v, want the fields", key, fill, err)
			}

			// Averaged over runs, so that what the runtime allocates
			// meanwhile does not count.
			const runs = 100
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range runs {
				_, _, _ = LossFromFields(fields)
			}
			runtime.ReadMemStats(&after)
			if got := (after.TotalAlloc - before.TotalAlloc) / runs; got > 1024 {
				t.Errorf("LossFromFields(%s=%s... of %d bytes) allocated %d bytes a call, want at most 1 KiB", key, fill, len(fields[key]), got)
			}
			l, ok, err := LossFromFields(fields)
			var le *ReportError
			if ok || !sameLoss(l, Loss{}) || !errors.As(err, &le) || le.Kind != KindLoss || le.Key != key {
				t.Errorf("LossFromFields(%s=%s...) = %+v, %v, %v, want a loss *ReportError for %s", key, fill, l, ok, err, key)
				continue
			}
			if len(err.Error()) > 300 {
				t.Errorf("LossFromFields(%s=%s...) error is %d bytes, want it clipped", key, fill, len(err.Error()))
			}
		}
	}
}

// TestLossFieldsAmongHostileKeys: a loss report among as many other fields
// as Decode accepts still reads back, and one field more refuses the whole
// metadata (ErrTooManyFields), so a reader never sees a partial report.
func TestLossFieldsAmongHostileKeys(t *testing.T) {
	loss := Loss{Report{100, 1499, since, CauseRetention}, 1100}
	var b strings.Builder
	b.WriteString(Prefix + "o=0 e=0 " + loss.Fields())
	for i := 5; i < MaxUnknownFields; i++ {
		b.WriteString(" " + base26(i) + "=" + strings.Repeat("z", 100))
	}
	_, fields, err := DecodeFields(b.String())
	if err != nil {
		t.Fatalf("DecodeFields(the report and %d other fields) = %v", MaxUnknownFields-5, err)
	}
	if back, ok, err := LossFromFields(fields); err != nil || !ok || !sameLoss(back, loss) {
		t.Errorf("LossFromFields = %+v, %v, %v, want %+v", back, ok, err, loss)
	}
	_, fields, err = DecodeFields(b.String() + " zzzzz=1")
	if !errors.Is(err, ErrTooManyFields) || fields != nil {
		t.Errorf("DecodeFields(one field more) = %d fields, %v, want ErrTooManyFields", len(fields), err)
	}
}
