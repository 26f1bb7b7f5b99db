package commitmeta

import (
	"errors"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// checkDecodeCommit holds DecodeCommit(s) to what the package promises,
// given what DecodeFields returned for s:
//   - it fails exactly when DecodeFields does, with the same error and a
//     zero Decoded;
//   - its header is DecodeFields'; its ranges are too, unless RangesErr,
//     a *LastEpochError, says why they are left out (then there were some);
//   - LastEpoch >= -1, -1 without ranges, and with ranges it is l='s value,
//     in the one form the format allows; every l= it accepts, the plugin's
//     strconv check of 23d44c0 accepted with the same value;
//   - Stall, Loss and DeadLetter, and their errors, are what
//     StallFromFields, LossFromFields and DeadLetterFromFields make of the
//     fields, and a DeadLetter keeps its bounds;
//   - Attempts are what refAttempts, a reader written from the format's
//     text with strconv and big integers, makes of a=; when it refuses a=,
//     Attempts is nil and AttemptsErr an *AttemptsError whose offset lies
//     within the value and whose message is bounded; the runs read keep
//     the invariants of Commit.Attempts;
//   - a Decoded without errors encodes again, whole, with EncodeCommit to
//     metadata that decodes to the same Decoded.
func checkDecodeCommit(t *testing.T, s string, m Meta, fields map[string]string, err error) {
	t.Helper()
	d, derr := DecodeCommit(s)
	if (err == nil) != (derr == nil) || err != nil && err.Error() != derr.Error() {
		t.Fatalf("DecodeCommit(%q) error %v, but DecodeFields' is %v", s, derr, err)
	}
	if derr != nil {
		if !sameDecoded(d, Decoded{}) || d.Delivered != nil || d.Attempts != nil {
			t.Fatalf("DecodeCommit(%q) = %+v with error %v, want a zero Decoded", s, d, derr)
		}
		return
	}
	if d.Base != m.Base || d.Epoch != m.Epoch {
		t.Fatalf("DecodeCommit(%q) header %d, %d, want DecodeFields' %d, %d", s, d.Base, d.Epoch, m.Base, m.Epoch)
	}
	// What the plugin's onFetched accepted at 23d44c0.
	old, oldErr := strconv.ParseInt(fields[keyLastEpoch], 10, 32)
	oldValid := oldErr == nil && old >= -1
	switch {
	case d.RangesErr != nil:
		var le *LastEpochError
		if !errors.As(d.RangesErr, &le) || len(m.Delivered) == 0 || d.Delivered != nil || d.LastEpoch != -1 {
			t.Fatalf("DecodeCommit(%q) = %+v, RangesErr %v: want a *LastEpochError, ranges in DecodeFields' Meta and none in DecodeCommit's", s, d, d.RangesErr)
		}
		if len(le.Error()) > 300 {
			t.Fatalf("DecodeCommit(%q) error is %d bytes long: %v", s, len(le.Error()), le)
		}
	case !sameMeta(d.Meta, m):
		t.Fatalf("DecodeCommit(%q) = %+v, want DecodeFields' %+v", s, d.Meta, m)
	case len(m.Delivered) == 0:
		if d.LastEpoch != -1 {
			t.Fatalf("DecodeCommit(%q).LastEpoch = %d without ranges, want -1", s, d.LastEpoch)
		}
	default:
		if d.LastEpoch < -1 || fields[keyLastEpoch] != strconv.Itoa(int(d.LastEpoch)) {
			t.Fatalf("DecodeCommit(%q).LastEpoch = %d, but l=%q", s, d.LastEpoch, fields[keyLastEpoch])
		}
		if !oldValid || old != int64(d.LastEpoch) {
			t.Fatalf("DecodeCommit(%q).LastEpoch = %d, but the plugin read l=%q as %d, %v", s, d.LastEpoch, fields[keyLastEpoch], old, oldErr)
		}
	}

	st, stalled, stallErr := StallFromFields(fields)
	if stalled != (d.Stall != nil) || stalled && !sameStall(st, *d.Stall) || !sameError(stallErr, d.StallErr) {
		t.Fatalf("DecodeCommit(%q) stall %+v, %v, want %+v, %v, %v", s, d.Stall, d.StallErr, st, stalled, stallErr)
	}
	l, lost, lossErr := LossFromFields(fields)
	if lost != (d.Loss != nil) || lost && !sameLoss(l, *d.Loss) || !sameError(lossErr, d.LossErr) {
		t.Fatalf("DecodeCommit(%q) loss %+v, %v, want %+v, %v, %v", s, d.Loss, d.LossErr, l, lost, lossErr)
	}

	dl, lettered, dlErr := DeadLetterFromFields(fields)
	if lettered != (d.DeadLetter != nil) || lettered && !sameDeadLetter(dl, *d.DeadLetter) || !sameError(dlErr, d.DeadLetterErr) {
		t.Fatalf("DecodeCommit(%q) dead letter %+v, %v, want %+v, %v, %v", s, d.DeadLetter, d.DeadLetterErr, dl, lettered, dlErr)
	}
	if d.DeadLetter != nil {
		if why := validDeadLetter(*d.DeadLetter); why != "" {
			t.Fatalf("DecodeCommit(%q).DeadLetter = %+v, which breaks a bound: %s", s, d.DeadLetter, why)
		}
	}
	checkDecodedAttempts(t, s, d, fields)

	if d.RangesErr != nil || d.StallErr != nil || d.LossErr != nil || d.AttemptsErr != nil || d.DeadLetterErr != nil {
		return
	}
	c := Commit{Base: d.Base, Epoch: d.Epoch, Stall: d.Stall, Loss: d.Loss, Attempts: d.Attempts, DeadLetter: d.DeadLetter,
		Delivered: d.Delivered, EpochOf: func(int64) int32 { return d.LastEpoch }}
	enc, cut, _ := EncodeCommit(c, math.MaxInt)
	back, err := DecodeCommit(enc)
	if cut != 0 || err != nil || !sameDecoded(back, d) {
		t.Fatalf("DecodeCommit(EncodeCommit(DecodeCommit(%q))) = %+v, %v (%q, cut %d), want %+v", s, back, err, enc, cut, d)
	}
}

func sameError(a, b error) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Error() == b.Error()
}

func sameDecoded(a, b Decoded) bool {
	return sameMeta(a.Meta, b.Meta) && a.LastEpoch == b.LastEpoch &&
		(a.Stall == nil) == (b.Stall == nil) && (a.Stall == nil || sameStall(*a.Stall, *b.Stall)) &&
		(a.Loss == nil) == (b.Loss == nil) && (a.Loss == nil || sameLoss(*a.Loss, *b.Loss)) &&
		slices.Equal(a.Attempts, b.Attempts) &&
		(a.DeadLetter == nil) == (b.DeadLetter == nil) && (a.DeadLetter == nil || sameDeadLetter(*a.DeadLetter, *b.DeadLetter)) &&
		sameError(a.RangesErr, b.RangesErr) && sameError(a.StallErr, b.StallErr) && sameError(a.LossErr, b.LossErr) &&
		sameError(a.AttemptsErr, b.AttemptsErr) && sameError(a.DeadLetterErr, b.DeadLetterErr)
}

// checkDecodedAttempts holds d.Attempts and d.AttemptsErr to refAttempts'
// reading of a= in fields.
func checkDecodedAttempts(t *testing.T, s string, d Decoded, fields map[string]string) {
	t.Helper()
	v, has := fields[keyAttempts]
	if !has {
		if d.Attempts != nil || d.AttemptsErr != nil {
			t.Fatalf("DecodeCommit(%q) = attempts %v, %v without a=, want nil, nil", s, d.Attempts, d.AttemptsErr)
		}
		return
	}
	want, ok := refAttempts(v, d.Base)
	if !ok {
		var ae *AttemptsError
		if d.Attempts != nil || !errors.As(d.AttemptsErr, &ae) || ae.Offset < 0 || ae.Offset > len(v) || len(ae.Error()) > 300 {
			t.Fatalf("DecodeCommit(%q) = attempts %v, %v, want nil and a bounded *AttemptsError within a=", s, d.Attempts, d.AttemptsErr)
		}
		return
	}
	if d.AttemptsErr != nil || !slices.Equal(d.Attempts, want) {
		t.Fatalf("DecodeCommit(%q) = attempts %v, %v, want %v", s, d.Attempts, d.AttemptsErr, want)
	}
	if err := checkAttempts(d.Base, d.Attempts); err != nil {
		t.Fatalf("DecodeCommit(%q).Attempts = %v, which breaks an invariant: %v", s, d.Attempts, err)
	}
}

// refAttempts reads a= as the format's text specifies it, by other means
// than parseAttempts: comma-separated gap.len.n, each a decimal in its one
// form (what strconv formats back to the same text), gap >= 0, len >= 1, n
// from 1 to MaxInt32, and every From and To, summed in big integers, at most
// MaxInt64. ok is false when v breaks any of it.
func refAttempts(v string, base int64) ([]Attempts, bool) {
	var out []Attempts
	prev := big.NewInt(base)
	for _, run := range strings.Split(v, ",") {
		parts := strings.Split(run, ".")
		if len(parts) != 3 {
			return nil, false
		}
		var nums [3]int64
		for i, p := range parts {
			n, err := strconv.ParseInt(p, 10, 64)
			if err != nil || strconv.FormatInt(n, 10) != p || n < 0 {
				return nil, false
			}
			nums[i] = n
		}
		if nums[1] < 1 || nums[2] < 1 || nums[2] > math.MaxInt32 {
			return nil, false
		}
		from := new(big.Int).Add(prev, big.NewInt(nums[0]))
		to := new(big.Int).Add(from, big.NewInt(nums[1]))
		if !to.IsInt64() {
			return nil, false
		}
		out = append(out, Attempts{From: from.Int64(), To: to.Int64(), N: int32(nums[2])})
		prev = to
	}
	return out, true
}

func TestDecodeCommitLastEpoch(t *testing.T) {
	const ranges = "wm1 o=1200 e=3 d=10.50,20.40"
	for _, tc := range []struct {
		in     string
		last   int32
		ranges bool  // the ranges are read
		err    error // what RangesErr wraps, when they are not
		errMsg string
	}{
		{ranges + " l=4", 4, true, nil, ""},
		{ranges + " l=0", 0, true, nil, ""},
		{ranges + " l=-1", -1, true, nil, ""},
		{ranges + " l=2147483647", math.MaxInt32, true, nil, ""},
		{"wm1 l=7 o=1200 e=3 d=10.50", 7, true, nil, ""}, // any order
		// Without ranges l= is not needed, and not read.
		{"wm1 o=1200 e=3", -1, false, nil, ""},
		{"wm1 o=1200 e=3 d=", -1, false, nil, ""},
		{"wm1 o=1200 e=3 l=4", -1, false, nil, ""},
		{"wm1 o=1200 e=3 l=zz", -1, false, nil, ""},
		// With ranges it is, in its one form. The plugin's strconv check
		// accepted +4, 04 and -0 too; no writer of ours wrote them.
		{ranges, -1, false, ErrMissingField, "commitmeta: last epoch field l: want -1 or a decimal int32"},
		{ranges + " l=", -1, false, nil, `l="": want -1`},
		{ranges + " l=-2", -1, false, nil, `l="-2"`},
		{ranges + " l=-0", -1, false, nil, `l="-0"`},
		{ranges + " l=+4", -1, false, nil, `l="+4"`},
		{ranges + " l=04", -1, false, nil, `l="04"`},
		{ranges + " l=4x", -1, false, nil, `l="4x"`},
		{ranges + " l=2147483648", -1, false, ErrOverflow, `l="2147483648"`},
		{ranges + " l=" + strings.Repeat("9", 100), -1, false, ErrOverflow, `l="9999999999999999999999999999999999999999..."`},
	} {
		d, err := DecodeCommit(tc.in)
		if err != nil {
			t.Fatalf("DecodeCommit(%q) = %v", tc.in, err)
		}
		if d.LastEpoch != tc.last || (len(d.Delivered) > 0) != tc.ranges || d.Base != 1200 || d.Epoch != 3 {
			t.Errorf("DecodeCommit(%q) = %+v, want LastEpoch %d, ranges %v", tc.in, d, tc.last, tc.ranges)
		}
		if tc.errMsg == "" {
			if d.RangesErr != nil {
				t.Errorf("DecodeCommit(%q).RangesErr = %v, want nil", tc.in, d.RangesErr)
			}
			continue
		}
		var le *LastEpochError
		if !errors.As(d.RangesErr, &le) || !strings.Contains(d.RangesErr.Error(), tc.errMsg) || tc.err != nil && !errors.Is(d.RangesErr, tc.err) {
			t.Errorf("DecodeCommit(%q).RangesErr = %v, want a *LastEpochError naming %q, wrapping %v", tc.in, d.RangesErr, tc.errMsg, tc.err)
		}
	}
}

// TestDecodeCommitParts checks that each part is read on its own: a
// malformed report or l= leaves out that part only, and metadata that
// Decode refuses is refused whole, with Decode's error.
func TestDecodeCommitParts(t *testing.T) {
	stall, loss := plainStall.Fields(), plainLoss.Fields()
	for _, tc := range []struct {
		in                           string
		ranges, stall, loss          bool
		rangesErr, stallErr, lossErr string // parts of the errors' messages
	}{
		{"wm1 o=1200 e=3 d=10.50 " + stall + " " + loss + " l=3", true, true, true, "", "", ""},
		{"wm1 o=1200 e=3 " + stall, false, true, false, "", "", ""},
		{"wm1 o=1200 e=3 d=10.50 " + loss + " l=3", true, false, true, "", "", ""},
		{"wm1 o=1200 e=3 d=10.50 sf=1200 sa=3 " + loss + " l=3", true, false, true, "", "stall field sl", ""},
		{"wm1 o=1200 e=3 d=10.50 " + stall + " lf=100 l=3", true, true, false, "", "", "loss field ll"},
		{"wm1 o=1200 e=3 d=10.50 " + stall + " " + loss, false, true, true, "last epoch field l", "", ""},
		{"wm1 o=1200 e=3 d=10.50 sf=x lf=x l=x", false, false, false, "last epoch field l", "stall field sf", "loss field lf"},
	} {
		d, err := DecodeCommit(tc.in)
		if err != nil {
			t.Fatalf("DecodeCommit(%q) = %v", tc.in, err)
		}
		got := func(e error, want string) bool {
			return want == "" && e == nil || want != "" && e != nil && strings.Contains(e.Error(), want)
		}
		if (d.Delivered != nil) != tc.ranges || (d.Stall != nil) != tc.stall || (d.Loss != nil) != tc.loss ||
			!got(d.RangesErr, tc.rangesErr) || !got(d.StallErr, tc.stallErr) || !got(d.LossErr, tc.lossErr) {
			t.Errorf("DecodeCommit(%q) = %+v, want ranges %v, stall %v, loss %v, errors %q, %q, %q",
				tc.in, d, tc.ranges, tc.stall, tc.loss, tc.rangesErr, tc.stallErr, tc.lossErr)
		}
		if tc.stall && !sameStall(*d.Stall, plainStall) || tc.loss && !sameLoss(*d.Loss, plainLoss) {
			t.Errorf("DecodeCommit(%q) = stall %+v, loss %+v, want %+v, %+v", tc.in, d.Stall, d.Loss, plainStall, plainLoss)
		}
	}
	for _, in := range []string{"", "wm2 o=1", "wm1 o=1 e=1 o=2", "wm1 o=01 e=1 l=3", "wm1 o=1 e=1 d=0.1 l=3", "wm1 e=1 l=3"} {
		_, want := Decode(in)
		d, err := DecodeCommit(in)
		if err == nil || err.Error() != want.Error() || !sameDecoded(d, Decoded{}) {
			t.Errorf("DecodeCommit(%q) = %+v, %v, want a zero Decoded and Decode's error %v", in, d, err, want)
		}
	}
}
