package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/watermark-connect/watermark-connect/tracker"
)

// demoCommand runs the tracker on a scrambled acknowledgement order. A later
// change replaces it with a full pipeline on an in-process broker.
func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "Show the watermark on an embedded example (no broker needed)",
		Action: func(c *cli.Context) error {
			t := tracker.New()
			const n = 10
			for seq := range uint64(n) {
				t.Register(seq, int64(seq*10+9))
			}
			for step := range uint64(n) {
				seq := (step * 7) % n
				t.Resolve(seq, tracker.Delivered)
				wm, moved := t.Advance()
				fmt.Fprintf(c.App.Writer, "ack batch %d: watermark moved=%v commit=%d pending=%d\n", seq, moved, wm, t.Pending())
			}
			return nil
		},
	}
}
