"""The GPU figures: the fused scans against cuDNN's GRU (`acceptance`, `cells`), where a step's and
a scan's time goes (`step_profile`, `scan_diagnosis`), paper-scale trials (`paper_trial`)."""
