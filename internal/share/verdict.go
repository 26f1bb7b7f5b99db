package share

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Verdict is what became of a record the input held. The zero value,
// Held, is no verdict yet.
type Verdict uint8

const (
	// Held: no verdict yet; the record's lock is renewed while it lasts.
	Held Verdict = iota
	// Writing: failed at its last attempt and being written to the
	// dead-letter topic; still held and renewed, its verdict not yet given.
	Writing
	// Accepted: the pipeline took the record (AckAccept).
	Accepted
	// Released: the record goes back to the broker, which delivers it
	// again with a higher delivery count (AckRelease).
	Released
	// Rejected: failed at its last attempt with no dead-letter topic; the
	// broker archives it (AckReject).
	Rejected
	// DeadLettered: written to the dead-letter topic, the broker
	// acknowledged the write, then accepted (AckAccept).
	DeadLettered
)

var verdictNames = [...]string{"held", "writing", "accepted", "released", "rejected", "dead_lettered"}

// String is the verdict's name, as the records metric labels it.
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "unknown"
}

// Final reports whether v is a verdict given to kgo, one a record keeps.
func (v Verdict) Final() bool { return v >= Accepted && v <= DeadLettered }

// status is the kgo acknowledgement that gives v (0 for none).
func (v Verdict) status() kgo.AckStatus {
	switch v {
	case Accepted, DeadLettered:
		return kgo.AckAccept
	case Released:
		return kgo.AckRelease
	case Rejected:
		return kgo.AckReject
	default:
		return 0
	}
}

// Decide is the verdict for a record the pipeline failed at delivery
// attempt attempt (the broker's delivery count, from 1): released for
// another attempt below maxAttempts; at or past it dead-lettered when a
// dead-letter topic is set, else rejected. Never a release at the last
// attempt: the broker archives a record released at its delivery count
// limit (kfake share_groups.go:166-171, as Kafka's SharePartition does), and
// maxAttempts is at most that limit, so that no record is archived without
// the input having said so.
func Decide(attempt, maxAttempts int32, deadLetter bool) Verdict {
	switch {
	case attempt < maxAttempts:
		return Released
	case deadLetter:
		return DeadLettered
	default:
		return Rejected
	}
}

// AckOutcome classifies one partition's result of an acknowledgement the
// broker answered (kgo.ShareAckCallback).
type AckOutcome uint8

const (
	// AckOK: the broker applied the verdicts.
	AckOK AckOutcome = iota
	// AckLockLost: the broker no longer held the records for this member:
	// their lock had expired, or the share session they were acquired in
	// ended. They may have gone to another member: a duplicate.
	AckLockLost
	// AckFailed: any other error; the verdicts were not applied and the
	// records come back after their lock.
	AckFailed
)

// ClassifyAck tells what an acknowledgement error means for the records.
// INVALID_RECORD_STATE is the broker's answer to a verdict on a record not
// acquired by this member (its lock expired: Kafka's SharePartition);
// SHARE_SESSION_NOT_FOUND and INVALID_SHARE_SESSION_EPOCH mean the session
// that acquired them ended, which releases them.
func ClassifyAck(err error) AckOutcome {
	switch {
	case err == nil:
		return AckOK
	case errors.Is(err, kerr.InvalidRecordState),
		errors.Is(err, kerr.ShareSessionNotFound),
		errors.Is(err, kerr.InvalidShareSessionEpoch):
		return AckLockLost
	default:
		return AckFailed
	}
}
