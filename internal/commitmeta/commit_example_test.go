package commitmeta_test

import (
	"fmt"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

func ExampleEncodeCommit() {
	// The leader epochs of the records, as the consumer fetched them:
	// epoch 3 up to offset 1269, epoch 4 from 1270.
	epochOf := func(offset int64) int32 {
		if offset < 1270 {
			return 3
		}
		return 4
	}
	c := commitmeta.Commit{
		Base:  1200,
		Epoch: 3,
		Stall: &commitmeta.Stall{
			First: 1200, Last: 1209, Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			Attempts: 3, Reason: "http 503", Member: "orders-sink@pod-7",
		},
		Delivered: []commitmeta.Range{{From: 1210, To: 1260}, {From: 1280, To: 1320}},
		EpochOf:   epochOf,
	}
	s, cut, keptTo := commitmeta.EncodeCommit(c, 4096)
	fmt.Println(s)
	fmt.Println(cut, keptTo)

	// Less room: the stall keeps its room, the second range is cut, and l=
	// is the epoch of the last record of the first.
	s, cut, keptTo = commitmeta.EncodeCommit(c, 100)
	fmt.Println(s)
	fmt.Println(cut, keptTo)

	d, err := commitmeta.DecodeCommit(s)
	fmt.Println(d.Delivered, d.LastEpoch, d.Stall.Reason, d.Loss, err)
	// Output:
	// wm1 o=1200 e=3 d=10.50,20.40 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 l=4
	// 0 1320
	// wm1 o=1200 e=3 d=10.50 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 l=3
	// 1 1260
	// [{1210 1260}] 3 http 503 <nil> <nil>
}
