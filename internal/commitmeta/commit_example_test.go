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
			Report:   commitmeta.Report{First: 1200, Last: 1209, Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Reason: "http 503"},
			Attempts: 3,
			Member:   "orders-sink@pod-7",
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

func ExampleEncodeCommitKept() {
	// The records 1241 to 1249 failed twice; 12 records between 100 and
	// 140 were dead-lettered, the first at 11:00, the last for "http 503".
	c := commitmeta.Commit{
		Base:     1241,
		Epoch:    3,
		Attempts: []commitmeta.Attempts{{From: 1241, To: 1250, N: 2}},
		DeadLetter: &commitmeta.DeadLetter{
			Report: commitmeta.Report{First: 100, Last: 140, Since: time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC), Reason: "http 503"},
			Count:  12,
		},
	}
	s, k := commitmeta.EncodeCommitKept(c, 4096)
	fmt.Println(s)
	fmt.Printf("%+v\n", k)

	d, err := commitmeta.DecodeCommit(s)
	fmt.Println(d.Attempts, d.DeadLetter.Count, d.DeadLetter.Since, d.DeadLetter.Reason, err)
	// Output:
	// wm1 o=1241 e=3 a=0.9.2 xf=100 xl=140 xn=12 xs=1767265200000 xr=http+503
	// {Cut:0 KeptTo:1241 Attempts:1}
	// [{1241 1250 2}] 12 2026-01-01 11:00:00 +0000 UTC http 503 <nil>
}
