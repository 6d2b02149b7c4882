#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::smf_n4(data));
