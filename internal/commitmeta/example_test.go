package commitmeta_test

import (
	"errors"
	"fmt"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

func ExampleEncode() {
	m := commitmeta.Meta{
		Base:      1200,
		Epoch:     3,
		Delivered: []commitmeta.Range{{From: 1210, To: 1260}, {From: 1280, To: 1320}},
	}
	s, cut := commitmeta.Encode(m, "", 4096)
	fmt.Println(s, cut)
	s, cut = commitmeta.Encode(m, "", 22) // room for the first range only
	fmt.Println(s, cut)
	// Output:
	// wm1 o=1200 e=3 d=10.50,20.40 0
	// wm1 o=1200 e=3 d=10.50 1
}

func ExampleDecode() {
	m, err := commitmeta.Decode("wm1 o=1200 e=3 d=10.50,20.40")
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Delivered, m.Records())
	for _, offset := range []int64{1200, 1210, 1260, 1319} {
		fmt.Println(offset, m.Covered(offset))
	}
	// Another client's metadata is not an error to log, just nothing to skip.
	_, err = commitmeta.Decode("watermark-connect-0d5c1a2e-6c1f-4e0b-9a7e-1f2d3c4b5a69")
	fmt.Println(errors.Is(err, commitmeta.ErrNotOurs))
	// Output:
	// [{1210 1260} {1280 1320}] 90
	// 1200 false
	// 1210 true
	// 1260 false
	// 1319 true
	// true
}
