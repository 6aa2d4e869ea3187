package main

import "github.com/podgate/podgate/gate/gatecli"

func init() { register(gatecli.Command) }
