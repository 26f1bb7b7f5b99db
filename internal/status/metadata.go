package status

import (
	"errors"
	"fmt"
	"strings"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// readMetadata decodes the commit metadata of p's committed offset: the
// ranges delivered above it, the stall provenance, the loss report and the
// dead-letter report, all only when the metadata was written for that
// offset. The reports are read independently: a malformed one is left out
// (and named in MetadataErr) without hiding the others, so that a
// malformed loss or dead-letter report cannot make a stalled partition
// read as healthy.
func (p *Partition) readMetadata(meta string) {
	m, fields, err := commitmeta.DecodeFields(meta)
	switch {
	case errors.Is(err, commitmeta.ErrNotOurs):
		return
	case err != nil:
		p.MetadataErr = err
		return
	case m.Base != p.Committed:
		p.MetadataErr = fmt.Errorf("the metadata was written for offset %d, not the committed offset %d (an offset reset?): ignored", m.Base, p.Committed)
		return
	}
	p.DeliveredAbove = m.Records()
	s, stalled, stallErr := commitmeta.StallFromFields(fields)
	if stalled {
		p.Stall = &s
	}
	l, lost, lossErr := commitmeta.LossFromFields(fields)
	if lost {
		p.Loss = &l
	}
	dead, deadErr := commitmeta.DeadLetterFromFields(fields)
	p.DeadLetter = dead
	var errs reportErrors
	for _, err := range []error{stallErr, lossErr, deadErr} {
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
