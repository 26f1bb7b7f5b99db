package commitmeta

// The dead-letter report keys, in the order Fields writes them. The x
// prefix keeps them apart from the loss report's l keys and from l=.
const (
	keyDeadFirst = "xf"
	keyDeadLast  = "xl"
	keyDeadCount = "xn"
	keyDeadSince = "xs"
	keyDeadError = "xr"
)

// MaxDeadLetterFieldsLen is the longest Fields of a DeadLetter that
// DeadLetterFromFields accepts: four numbers of at most 19 digits (an int64
// >= 0), an error class of which every byte is escaped to three, and the
// five keys with their separators.
const MaxDeadLetterFieldsLen = 5*len("xf=") + 4*len(" ") + 4*19 + 3*MaxReasonLen

// DeadLetter is a report of the records the input dead-lettered lately:
// records the output kept refusing, written to the dead-letter topic so that
// the partition's watermark could move past them. Dead-lettering is by
// design, not a loss; the input carries the report in the partition's commit
// metadata, as it carries a Loss, so that `watermark-connect status` and the
// next owner see from the broker alone what was set aside, and why.
//
// Its Report says where and why: offsets First through Last, inclusive,
// bound the dead-lettered records, Since is the earliest event merged, and
// Reason the error class of the last failure. Count of the offsets in
// First..Last were dead-lettered: fewer than all when records between them
// were delivered, or when several events were merged.
//
// A DeadLetter is a value, safe for concurrent use. The zero DeadLetter
// (Count 0) is none: MergeDeadLetter treats it as such, EncodeCommit does
// not write it, and Fields of it does not read back.
type DeadLetter struct {
	Report
	Count int64 // how many were dead-lettered: 1 <= Count <= Last-First+1
}

// Fields returns d as extra fields for Encode:
//
//	xf=<First> xl=<Last> xn=<Count> xs=<Since, Unix ms> xr=<Reason>
//
// Reason is made printable, cut to MaxReasonLen bytes and query-escaped, as
// Stall.Fields writes a stall's. The numbers are written as they are: a
// DeadLetter that breaks the bounds on its fields encodes, and
// DeadLetterFromFields then reports the broken field. For a DeadLetter
// within them the result is at most MaxDeadLetterFieldsLen bytes.
func (d DeadLetter) Fields() string {
	return string(d.appendFields(make([]byte, 0, d.fieldsLen())))
}

// appendFields appends d.Fields() to b. It allocates nothing when b has
// room for fieldsLen() more bytes.
func (d DeadLetter) appendFields(b []byte) []byte {
	return d.appendReason(d.appendHead(b, KindDeadLetter, d.Count), KindDeadLetter)
}

// fieldsLen returns len(d.Fields()) without building it.
func (d DeadLetter) fieldsLen() int {
	return d.headLen(KindDeadLetter, d.Count) + d.reasonLen(KindDeadLetter)
}

// DeadLetterFromFields reads a DeadLetter back from the fields DecodeFields
// returns, as LossFromFields reads a Loss. ok is false, with no error, when
// there is none: no xf key (nothing was dead-lettered lately, or metadata
// written before the report existed).
// When xf is present every field must be, and a field that is missing or
// malformed is a *ReportError naming it, its value and the form expected.
//
// The fields are untrusted (anyone may commit to a group):
// DeadLetterFromFields never panics, does work independent of the values'
// lengths (a number is refused at its twentieth digit, an error class
// longer than 3*MaxReasonLen before it is read), and a DeadLetter it
// returns keeps every bound stated on DeadLetter's fields, so that its
// Fields encode it again to the same DeadLetter. Since is in UTC.
func DeadLetterFromFields(fields map[string]string) (d DeadLetter, ok bool, err error) {
	if _, ok := fields[keyDeadFirst]; !ok {
		return DeadLetter{}, false, nil
	}
	if d.Report, d.Count, err = readHead(fields, KindDeadLetter); err != nil {
		return DeadLetter{}, false, err
	}
	if d.Reason, err = readReason(fields, KindDeadLetter); err != nil {
		return DeadLetter{}, false, err
	}
	return d, true, nil
}

// MergeDeadLetter returns one DeadLetter that reports both a and b, for a
// writer that dead-letters more records while it still carries a report; b
// is the later event:
//
//   - First is the lower First, Last the higher Last;
//   - Count is the sum, saturating at math.MaxInt64 and capped at
//     Last-First+1 (as in MergeLoss: each record is dead-lettered once, and
//     the cap keeps the result within its bounds);
//   - Since is the earlier of the two, a zero Since counting as unknown
//     (the other one is kept);
//   - Reason is b's: the report names the last failure, as an operator
//     looks at what fails now.
//
// A DeadLetter with Count 0 (the zero DeadLetter) is none: merging with it
// returns the other unchanged, so that a writer may start from
// DeadLetter{}. For two DeadLetters within their bounds the result is
// within them too, and its Count is at least each of theirs.
func MergeDeadLetter(a, b DeadLetter) DeadLetter {
	switch {
	case b.Count == 0:
		return a
	case a.Count == 0:
		return b
	}
	r, count, _ := mergeCounted(a.Report, a.Count, b.Report, b.Count)
	r.Reason = b.Reason
	return DeadLetter{Report: r, Count: count}
}
