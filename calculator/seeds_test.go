package calculator_test

// Seed runs as published (the two bundled pages), as tables.

import "github.com/matrixd/matrixd/calculator"

// faraRun is fara1.5-4b-autoround-rtx3060: max_model_len 262144, 8,192 output tokens, 30 s windows.
func faraRun() calculator.Run {
	return calculator.Run{
		ID: "fara", GPU: "RTX 3060", MaxModelLen: 262144, MaxNumSeqs: 128, MaxOutputTokens: 8192, GPUMemoryUtilization: 0.94,
		VRAMGB: 12, ParamsB: 4, Quantization: "AutoRound W4A16", WindowS: 30,
		Prefill: []calculator.PrefillPoint{
			{ContextTokens: 8192, TTFTMs: 3472},
			{ContextTokens: 16384, TTFTMs: 8237},
			{ContextTokens: 32768, TTFTMs: 21642},
			{ContextTokens: 65536, TTFTMs: 64442},
			{ContextTokens: 131072, TTFTMs: 212786},
		},
		Decode: []calculator.Cell{
			// context, concurrency, status, total, per-request, TTFT, TBT, avg active, output tokens, duration
			cell(0, 1, "valid", f(83.1), f(83.4), f(85), f(12.0), f(1.0), n(2492), f(30.0)),
			cell(0, 2, "valid", f(159.3), f(80.1), f(99), f(12.5), f(2.0), n(4780), f(30.0)),
			cell(0, 4, "valid", f(294.2), f(74.1), f(203), f(13.5), f(4.0), n(8824), f(30.0)),
			cell(0, 8, "valid", f(511.3), f(64.6), f(358), f(15.5), f(8.0), n(15336), f(30.0)),
			cell(0, 16, "valid", f(802.3), f(50.9), f(615), f(19.7), f(16.0), n(24080), f(30.0)),
			cell(0, 32, "valid", f(1053.3), f(33.2), f(1002), f(30.1), f(32.0), n(31584), f(30.0)),
			cell(0, 64, "valid", f(1273.2), f(19.8), f(1892), f(50.4), f(64.0), n(38208), f(30.0)),
			cell(0, 128, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(16384, 1, "valid", f(70.3), f(70.4), f(1282), f(14.2), f(1.0), n(2107), f(30.0)),
			cell(16384, 2, "valid", f(122.9), f(60.6), f(1892), f(16.5), f(2.0), n(3686), f(30.0)),
			cell(16384, 4, "valid", f(193.2), f(46.2), f(3080), f(21.7), f(4.0), n(5791), f(30.0)),
			cell(16384, 8, "valid", f(279.1), f(31.3), f(5465), f(32.0), f(8.0), n(8368), f(30.0)),
			cell(16384, 16, "valid", f(353.7), f(17.7), f(10312), f(56.6), f(16.0), n(10608), f(30.0)),
			cell(16384, 32, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(16384, 64, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(16384, 128, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(32768, 1, "valid", f(60.8), f(60.9), f(1527), f(16.4), f(1.0), n(1822), f(30.0)),
			cell(32768, 2, "valid", f(99.6), f(49.0), f(2265), f(20.4), f(2.0), n(2988), f(30.0)),
			cell(32768, 4, "valid", f(142.9), f(33.9), f(3656), f(29.5), f(4.0), n(4284), f(30.0)),
			cell(32768, 8, "valid", f(190.8), f(21.0), f(6465), f(47.6), f(8.0), n(5720), f(30.0)),
			cell(32768, 16, "valid", f(226.0), f(11.0), f(12192), f(90.6), f(16.0), n(6768), f(29.9)),
			cell(32768, 32, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(32768, 64, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(32768, 128, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(65536, 1, "valid", f(47.9), f(48.1), f(1282), f(20.8), f(1.0), n(1437), f(30.0)),
			cell(65536, 2, "valid", f(72.6), f(35.9), f(1775), f(27.8), f(2.0), n(2178), f(30.0)),
			cell(65536, 4, "valid", f(94.5), f(22.8), f(2766), f(43.9), f(4.0), n(2832), f(30.0)),
			cell(65536, 8, "valid", f(116.9), f(13.5), f(4759), f(74.3), f(8.0), n(3504), f(30.0)),
			cell(65536, 16, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(65536, 32, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(65536, 64, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(65536, 128, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(131072, 1, "requests_queued", f(30.7), f(34.0), f(3439), f(29.4), f(0.9), n(921), f(30.0)),
			cell(131072, 2, "requests_queued", f(37.9), f(22.4), f(5014), f(44.8), f(1.8), n(1138), f(30.0)),
			cell(131072, 4, "valid", f(55.7), f(12.4), f(7956), f(80.5), f(4.0), n(1668), f(30.0)),
			cell(131072, 8, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(131072, 16, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(131072, 32, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(131072, 64, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(131072, 128, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(253952, 1, "over_capacity", nil, nil, nil, nil, f(0.7), n(0), f(30.0)),
			cell(253952, 2, "over_capacity", nil, nil, nil, nil, f(0.7), n(0), f(30.0)),
			cell(253952, 4, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(253952, 8, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(253952, 16, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(253952, 32, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(253952, 64, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(253952, 128, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
		},
	}
}

// nemotronRun is nemotron-nano-12b-v2-awq-rtx3090: max_model_len 131072, 8,192 output tokens, 30 s windows.
func nemotronRun() calculator.Run {
	return calculator.Run{
		ID: "nemotron", MaxModelLen: 131072, MaxNumSeqs: 128, MaxOutputTokens: 8192, GPUMemoryUtilization: 0.94,
		VRAMGB: 24, ParamsB: 12, Quantization: "AWQ 4-bit", WindowS: 30,
		Prefill: []calculator.PrefillPoint{
			{ContextTokens: 8192, TTFTMs: 2338},
			{ContextTokens: 16384, TTFTMs: 5234},
			{ContextTokens: 32768, TTFTMs: 13099},
			{ContextTokens: 65536, TTFTMs: 36167},
			{ContextTokens: 122880, TTFTMs: 100611},
		},
		Decode: []calculator.Cell{
			// context, concurrency, status, total, per-request, TTFT, TBT, avg active, output tokens, duration
			cell(0, 1, "valid", f(94.2), f(94.3), f(38), f(10.6), f(1.0), n(2824), f(30.0)),
			cell(0, 2, "valid", f(180.5), f(90.4), f(63), f(11.1), f(2.0), n(5414), f(30.0)),
			cell(0, 4, "valid", f(333.4), f(83.6), f(105), f(12.0), f(4.0), n(10000), f(30.0)),
			cell(0, 8, "valid", f(580.9), f(72.9), f(183), f(13.7), f(8.0), n(17424), f(30.0)),
			cell(0, 16, "valid", f(916.3), f(57.5), f(270), f(17.4), f(16.0), n(27491), f(30.0)),
			cell(0, 32, "valid", f(1286.5), f(40.3), f(560), f(24.8), f(32.0), n(38592), f(30.0)),
			cell(0, 64, "valid", f(1469.4), f(22.9), f(1137), f(43.7), f(64.0), n(44032), f(30.0)),
			cell(0, 128, "requests_queued", f(1214.7), f(18.4), f(1024), f(54.3), f(67.0), n(36381), f(29.9)),
			cell(16384, 1, "valid", f(86.2), f(86.2), f(753), f(11.6), f(1.0), n(2584), f(30.0)),
			cell(16384, 2, "valid", f(154.8), f(76.7), f(1130), f(13.0), f(2.0), n(4642), f(30.0)),
			cell(16384, 4, "valid", f(268.4), f(65.1), f(1887), f(15.4), f(4.0), n(8052), f(30.0)),
			cell(16384, 8, "valid", f(427.5), f(49.8), f(3384), f(20.1), f(8.0), n(12824), f(30.0)),
			cell(16384, 16, "valid", f(603.1), f(32.6), f(6413), f(30.7), f(16.0), n(18080), f(30.0)),
			cell(16384, 32, "valid", f(766.0), f(18.2), f(12548), f(54.8), f(32.0), n(22976), f(30.0)),
			cell(16384, 64, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(16384, 128, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(32768, 1, "valid", f(79.8), f(79.8), f(2000), f(12.5), f(1.0), n(2392), f(30.0)),
			cell(32768, 2, "valid", f(135.7), f(66.1), f(2970), f(15.1), f(2.0), n(4070), f(30.0)),
			cell(32768, 4, "valid", f(224.8), f(51.8), f(4933), f(19.3), f(4.0), n(6744), f(30.0)),
			cell(32768, 8, "valid", f(338.6), f(35.4), f(8816), f(28.3), f(8.0), n(10152), f(30.0)),
			cell(32768, 16, "valid", f(451.4), f(19.8), f(16760), f(50.6), f(16.0), n(13536), f(30.0)),
			cell(32768, 32, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(32768, 64, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(32768, 128, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(65536, 1, "valid", f(69.3), f(69.4), f(2045), f(14.4), f(1.0), n(2080), f(30.0)),
			cell(65536, 2, "valid", f(109.9), f(53.5), f(3017), f(18.7), f(2.0), n(3294), f(30.0)),
			cell(65536, 4, "valid", f(170.6), f(39.4), f(4964), f(25.4), f(4.0), n(5116), f(30.0)),
			cell(65536, 8, "valid", f(240.3), f(25.1), f(8954), f(39.9), f(8.0), n(7208), f(30.0)),
			cell(65536, 16, "valid", f(300.5), f(13.3), f(16777), f(75.0), f(16.0), n(9008), f(30.0)),
			cell(65536, 32, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(65536, 64, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(65536, 128, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(122880, 1, "valid", f(56.7), f(56.8), f(1768), f(17.6), f(1.0), n(1701), f(30.0)),
			cell(122880, 2, "valid", f(82.2), f(40.2), f(2603), f(24.9), f(2.0), n(2466), f(30.0)),
			cell(122880, 4, "valid", f(120.9), f(28.3), f(4267), f(35.4), f(4.0), n(3624), f(30.0)),
			cell(122880, 8, "valid", f(160.2), f(17.2), f(7670), f(58.1), f(8.0), n(4800), f(30.0)),
			cell(122880, 16, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(122880, 32, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(122880, 64, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
			cell(122880, 128, "over_capacity", nil, nil, nil, nil, nil, nil, nil),
		},
	}
}

func cell(l, b int, status string, total, perReq, ttft, tbt, active *float64, output *int, dur *float64) calculator.Cell {
	return calculator.Cell{ContextTokens: l, Concurrency: b, Status: status, TotalTokS: total, PerRequestTokS: perReq,
		TTFTMs: ttft, TBTMs: tbt, AvgActiveRequests: active, OutputTokens: output, DurationS: dur}
}

func f(v float64) *float64 { return &v }

func n(v int) *int { return &v }
