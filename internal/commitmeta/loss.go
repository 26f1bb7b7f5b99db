package commitmeta

// The loss report keys, in the order Fields writes them. They are distinct
// from "l", the leader epoch of the last delivered range that the input
// writes next to them.
const (
	keyLossFirst = "lf"
	keyLossLast  = "ll"
	keyLossCount = "ln"
	keyLossSince = "ls"
	keyLossCause = "lc"
)

// Causes of a Loss, its Reason: the only values lc may take.
const (
	// CauseRetention: the broker deleted the records (retention by time or
	// size, or a delete-records call) before the input delivered them; the
	// log start moved past them.
	CauseRetention = "retention"

	// CauseTruncation: the log was truncated and rewritten below what the
	// input had read (an unclean leader election), so the records it had not
	// delivered are gone.
	CauseTruncation = "truncation"

	// CauseUnknown: offsets were skipped and the input cannot tell why.
	CauseUnknown = "unknown"
)

// MaxLossFieldsLen is the longest Fields of a Loss that LossFromFields
// accepts: four numbers of at most 19 digits (an int64 >= 0), the longest
// cause ("truncation"), and the five keys with their separators. A writer
// that reserves it before the ranges never has the report cut.
const MaxLossFieldsLen = 5*len("lf=") + 4*len(" ") + 4*19 + len(CauseTruncation)

// Loss is a report of records the input never delivered because they were no
// longer in the log when it read there: deleted by retention, or rewritten by
// an unclean leader election. The input carries it in the partition's commit
// metadata for a while after Since, so that a restart, another member and
// `watermark-connect status` see that data was lost and where, from the
// broker alone.
//
// Its Report says where and why: offsets First through Last, inclusive,
// bound the loss, Since is its earliest event, and Reason its cause
// (CauseRetention, CauseTruncation or CauseUnknown). Count of the offsets
// in First..Last were lost: fewer than all when some offsets between them
// were delivered, or when several events were merged with gaps between
// them. Losses are counted in offsets, not records: a record that is gone
// cannot be told from an offset that never held one (a transaction
// marker).
//
// A Loss is a value, safe for concurrent use. The zero Loss (Count 0) is no
// loss: MergeLoss treats it as such, and Fields of it does not read back.
type Loss struct {
	Report
	Count int64 // how many were lost: 1 <= Count <= Last-First+1 (at most math.MaxInt64)
}

// Fields returns l as extra fields for Encode:
//
//	lf=<First> ll=<Last> ln=<Count> ls=<Since, Unix ms> lc=<Reason>
//
// A Reason that is not one of the three causes (including "") is written
// as CauseUnknown: a report of lost data is never refused for its cause, and
// the result is always valid extra fields.
//
// The numbers are written as they are: a Loss that breaks the bounds on its
// fields encodes, and LossFromFields then reports the broken field. For a
// Loss within them the result is at most MaxLossFieldsLen bytes.
func (l Loss) Fields() string {
	return string(l.appendFields(make([]byte, 0, l.fieldsLen())))
}

// appendFields appends l.Fields() to b. It allocates nothing when b has
// room for fieldsLen() more bytes: the encoder of a commit writes the
// report straight into its buffer.
func (l Loss) appendFields(b []byte) []byte {
	return l.appendReason(l.appendHead(b, KindLoss, l.Count), KindLoss)
}

// fieldsLen returns len(l.Fields()) without building it.
func (l Loss) fieldsLen() int {
	return l.headLen(KindLoss, l.Count) + l.reasonLen(KindLoss)
}

// knownCause returns the constant equal to cause and true, or CauseUnknown
// and false when cause is none of the three. Returning the constant, not
// cause, keeps a Loss from holding on to the metadata string it was read
// from.
func knownCause(cause string) (string, bool) {
	switch cause {
	case CauseRetention:
		return CauseRetention, true
	case CauseTruncation:
		return CauseTruncation, true
	case CauseUnknown:
		return CauseUnknown, true
	}
	return CauseUnknown, false
}

// LossFromFields reads a Loss back from the fields DecodeFields returns. ok
// is false, with no error, when there is none: no lf key (nothing was lost
// lately, or metadata written before the report existed). When lf is present
// every field must be, and a field that is missing or malformed is a
// *ReportError naming it, its value and the form expected.
//
// The fields are untrusted (anyone may commit to a group): LossFromFields
// never panics, does work independent of the values' lengths (a number is
// refused at its twentieth digit), and a Loss it returns keeps every bound
// stated on Loss's fields, so that its Fields encode it again to the same
// Loss. Since is in UTC.
func LossFromFields(fields map[string]string) (l Loss, ok bool, err error) {
	if _, ok := fields[keyLossFirst]; !ok {
		return Loss{}, false, nil
	}
	if l.Report, l.Count, err = readHead(fields, KindLoss); err != nil {
		return Loss{}, false, err
	}
	if l.Reason, err = readReason(fields, KindLoss); err != nil {
		return Loss{}, false, err
	}
	return l, true, nil
}

// MergeLoss returns one Loss that reports both a and b, for a writer that
// meets a second loss while it still carries the first:
//
//   - First is the lower First, Last the higher Last;
//   - Count is the sum, saturating at math.MaxInt64 and capped at
//     Last-First+1 (the events are taken to be disjoint, as each offset is
//     found lost once; overlapping ones could otherwise count an offset
//     twice, and the cap keeps the result within its bounds);
//   - Since is the earlier of the two, a zero Since counting as unknown
//     (the other one is kept);
//   - Reason is the cause of the event whose Since is kept (a's when the
//     two are equal): the first thing that went wrong names the loss.
//
// A Loss with Count 0 (the zero Loss) is no loss: merging with it returns
// the other unchanged, so that a writer may start from Loss{}. For two
// Losses within their bounds the result is within them too, and its Count
// is at least each of theirs. MergeLoss is commutative except for the cause
// of two events with the same Since.
func MergeLoss(a, b Loss) Loss {
	switch {
	case b.Count == 0:
		return a
	case a.Count == 0:
		return b
	}
	r, count, bKept := mergeCounted(a.Report, a.Count, b.Report, b.Count)
	if bKept {
		r.Reason = b.Reason
	}
	return Loss{Report: r, Count: count}
}
