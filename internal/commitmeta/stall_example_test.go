package commitmeta_test

import (
	"fmt"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

func ExampleStall() {
	stall := commitmeta.Stall{
		Report:   commitmeta.Report{First: 1200, Last: 1209, Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Reason: "http 503"},
		Attempts: 3,
		Member:   "orders-sink@pod-7",
	}
	m := commitmeta.Meta{Base: 1200, Epoch: 3, Delivered: []commitmeta.Range{{From: 1210, To: 1260}}}
	s, _ := commitmeta.Encode(m, stall.Fields(), 4000)
	fmt.Println(s)

	_, fields, err := commitmeta.DecodeFields(s)
	if err != nil {
		panic(err)
	}
	back, ok, err := commitmeta.StallFromFields(fields)
	fmt.Println(ok, err)
	fmt.Println(back.First, back.Last, back.Since.Format(time.RFC3339), back.Attempts, back.Reason, back.Member)

	// Metadata without the provenance: not stalled, and no error.
	_, fields, _ = commitmeta.DecodeFields("wm1 o=1260 e=3")
	_, ok, err = commitmeta.StallFromFields(fields)
	fmt.Println(ok, err)
	// Output:
	// wm1 o=1200 e=3 d=10.50 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503
	// true <nil>
	// 1200 1209 2026-01-01T00:00:00Z 3 http 503 orders-sink@pod-7
	// false <nil>
}
