package status

import (
	"errors"
	"fmt"
	"strings"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// readMetadata decodes the commit metadata of p's committed offset with
// commitmeta.DecodeCommit, the decoder the input resumes with: the ranges
// delivered above it, the stall provenance, the loss report and the
// dead-letter report, all only when the metadata was written for that
// offset. The reports are read independently: a malformed one is left out
// (and named in MetadataErr) without hiding the others, so that a
// malformed loss or dead-letter report cannot make a stalled partition
// read as healthy. The runs of attempts (a=) are not shown, nor is an
// error in them.
//
// DeliveredAbove counts the ranges d= names whatever l= says, as status
// always has. DecodeCommit leaves out ranges without a valid l= (the
// input then skips none of them), so for such metadata, which the input
// itself never writes, the ranges are read again with commitmeta.Decode.
func (p *Partition) readMetadata(meta string) {
	d, err := commitmeta.DecodeCommit(meta)
	switch {
	case errors.Is(err, commitmeta.ErrNotOurs):
		return
	case err != nil:
		p.MetadataErr = err
		return
	case d.Base != p.Committed:
		p.MetadataErr = fmt.Errorf("the metadata was written for offset %d, not the committed offset %d (an offset reset?): ignored", d.Base, p.Committed)
		return
	}
	p.DeliveredAbove = d.Records()
	p.delivered = d.Delivered
	if d.RangesErr != nil {
		if m, err := commitmeta.Decode(meta); err == nil {
			p.DeliveredAbove = m.Records()
		}
	}
	p.Stall, p.Loss, p.DeadLetter = d.Stall, d.Loss, d.DeadLetter
	var errs reportErrors
	for _, err := range []error{d.StallErr, d.LossErr, d.DeadLetterErr} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	switch len(errs) {
	case 0:
	case 1:
		p.MetadataErr = errs[0]
	default:
		p.MetadataErr = errs
	}
}

// reportErrors is more than one malformed report of one commit, as one
// line (the text output lists it as one) whose parts stay reachable with
// errors.Is and errors.As.
type reportErrors []error

func (e reportErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e reportErrors) Unwrap() []error { return e }
