package commitmeta_test

import (
	"fmt"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

func ExampleLoss() {
	// Retention deleted offsets 100 to 1199 before they were delivered,
	// then, an hour later, 1300 to 1499.
	first := commitmeta.Loss{
		Report: commitmeta.Report{First: 100, Last: 1199, Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Reason: commitmeta.CauseRetention},
		Count:  1100,
	}
	second := commitmeta.Loss{
		Report: commitmeta.Report{First: 1300, Last: 1499, Since: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), Reason: commitmeta.CauseRetention},
		Count:  200,
	}
	loss := commitmeta.MergeLoss(first, second)

	s, _ := commitmeta.Encode(commitmeta.Meta{Base: 1500, Epoch: 3}, loss.Fields(), 4000)
	fmt.Println(s)

	_, fields, err := commitmeta.DecodeFields(s)
	if err != nil {
		panic(err)
	}
	back, ok, err := commitmeta.LossFromFields(fields)
	fmt.Println(ok, err)
	fmt.Println(back.Count, back.First, back.Last, back.Reason, back.Since.Format(time.RFC3339))

	// Metadata without the report: nothing lost, and no error.
	_, fields, _ = commitmeta.DecodeFields("wm1 o=1500 e=3 l=3")
	_, ok, err = commitmeta.LossFromFields(fields)
	fmt.Println(ok, err)
	// Output:
	// wm1 o=1500 e=3 lf=100 ll=1499 ln=1300 ls=1767225600000 lc=retention
	// true <nil>
	// 1300 100 1499 retention 2026-01-01T00:00:00Z
	// false <nil>
}
