"""Which test modules `make check` runs, and which only `make test` runs.

UNIT: mha_kit and pure-Python tests (no notebook executed, no nbgrader grading, no kernel, no
site build, no browser); `make check` runs them (`pytest -m unit`: tests/conftest.py marks them)
in under a minute on two cores. FULL: everything else, which only `make test` adds.

Every tests/test_*.py is in exactly one of the two (tests/test_suites.py fails otherwise), so a new
module is placed on purpose, never silently left out of `make check`.
"""

UNIT = frozenset({
    "test_chapter_attention_cost_r25f.py",
    "test_chapter_serving_operations_r27a.py",
    "test_chapter_attention_cost_r26a.py",
    "test_chapter_attention_cost_r27q.py",
    "test_chapter_first_principles_r27e.py",
    "test_chapter_cheat_sheet_r27b.py",
    "test_chapter_moe_serving_r22b.py",
    "test_chapter_moe_serving_r24c.py",
    "test_chapter_moe_serving_r27n.py",
    "test_chapter_moe_serving_r27u.py",
    "test_chapter_kv_cache_basics_r21a.py",
    "test_chapter_kv_cache_basics_r27w.py",
    "test_chapter_kv_cache_basics_r32f.py",
    "test_chapter_kv_cache_basics_r35b.py",
    "test_chapter_kv_cache_basics_r35a.py",
    "test_chapter_serving_kv_cache_r33c.py",
    "test_chapter_continuous_batching_r34c.py",
    "test_chapter_mla_serving_r33cc.py",
    "test_chapter_transformer_block_r33g.py",
    "test_chapter_gpu_kernels_r33gg.py",
    "test_chapter_gpu_kernels_r21b.py",
    "test_chapter_gpu_kernels_r26d.py",
    "test_chapter_multi_tenant_serving_r22c.py",
    "test_chapter_serving_reliability_r23a.py",
    "test_chapter_serving_reliability_r33ee.py",
    "test_chapter_serving_operations_r24a.py",
    "test_chapter_transformer_block_r24d.py",
    "test_chapter_transformer_block_r27h.py",
    "test_chapter_flash_decoding_r25c.py",
    "test_chapter_flash_decoding_r34b.py",
    "test_set_associative.py",
    "test_chapter_deployment_plan_r20d.py",
    "test_chapter_deployment_plan_r34hh.py",
    "test_chapter_deployment_plan_r33e.py",
    "test_chapter_prefix_caching_r32b.py",
    "test_chapter_prefix_caching_r34gg.py",
    "test_chapter_beyond_kv_cache_r34g.py",
    "test_chapter_prefix_caching_r33b.py",
    "test_chapter_serving_operations_r32i.py",
    "test_chapter_serving_operations_r33f.py",
    "test_chapter_scheduler_design_r33ff.py",
    "test_chapter_attention_cost_r32ii.py",
    "test_chapter_deployment_plan_r24e.py",
    "test_chapter_deployment_plan_r27d.py",
    "test_chapter_deployment_plan_r27j.py",
    "test_chapter_cuda_basics_r20e.py",
    "test_chapter_rope_scaling_r34f.py",
    "test_chapter_cuda_basics_r26c.py",
    "test_chapter_cuda_basics_r27l.py",
    "test_chapter_serving_operations_r27c.py",
    "test_chapter_low_precision_kv_r22a.py",
    "test_chapter_low_precision_kv_r25b.py",
    "test_chapter_low_precision_kv_r27r.py",
    "test_chapter_low_precision_kv_r32d.py",
    "test_chapter_attention_backends_r20b.py",
    "test_chapter_attention_backends_r27v.py",
    "test_chapter_attention_backends_r27zg.py",
    "test_chapter_attention_backends_r32h.py",
    "test_chapter_moe_serving_r32hh.py",
    "test_chapter_moe_serving_r34e.py",
    "test_chapter_state_space_models_r20c.py",
    "test_chapter_weight_quantization_r20a.py",
    "test_assertion_cache.py",  # runs pytest once on a sample module
    "test_engine_memory.py",
    "test_chapters_sincos_pipeline_memory_hf_caches.py",
    "test_requantize.py",
    "test_chapter_weight_quantization_integer_only.py",
    "test_chapter_qwen_gqa_h100_distillation.py",
    "test_chapter_buddy_batch_one_lora.py",
    "test_chapter_prompt_compression_longppl.py",
    "test_compression_memory.py",
    "test_vliw.py",
    "test_chapter_cuda_basics_vliw_schedule.py",
    "test_chapter_cuda_basics_activation_checkpointing.py",
    "test_chapter_gpu_kernels_cpu_gemm.py",
    "test_chapter_why_attention_contextual.py",
    "test_chapter_why_attention_r27m.py",
    "test_chapter_why_attention_r27ze.py",
    "test_chapter_why_attention_r27zf.py",
    "test_chapters_norm_eps_summation_retries_caches.py",
    "test_parallel_bounds.py",
    "test_chapters_attention_crossover_tp_pp_cp.py",
    "test_engine_plumbing.py",
    "test_vision_tokens.py",
    "test_amd_gpus.py",
    "test_mx_layout.py",
    "test_chapters_amd_peaks_mxfp4_latent_ag_gemm.py",
    "test_comm_overlap.py",
    "test_chip_memory.py",
    "test_chapter_second_reading_numbers.py",
    "test_chapters_mi300x_w4a16_vision_tokens_detokenizer.py",
    "test_chapter_serving_reliability_sram.py",
    "test_chapter_serving_reliability_weight_streaming.py",
    "test_chapter_disaggregated_serving_cross_vendor.py",
    "test_chapter_attention_backends_padding.py",
    "test_chapter_multi_tenant_serving_snapshots.py",
    "test_chapters_conv_tpu_buckets_formats_loss_scale.py",
    "test_chapters_eviction_chunking_hybrid_blocks.py",
    "test_stream_metrics.py",
    "test_compilers.py",
    "test_conv.py",
    "test_training_numerics.py",
    "test_training_memory.py",
    "test_dp_training.py",
    "test_awq_scaling.py",
    "test_gpt2_params.py",
    "test_chapter_transformer_block_gpt2_params.py",
    "test_chapter_common_mistakes_label_shift.py",
    "test_chapter_notation_linear_init.py",
    "test_chapter_dp_and_awq_scale.py",
    "test_mrope.py",
    "test_chapter_ffn_zero_mrope.py",
    "test_format_grids.py",
    "test_chapters_int_fp_grids_expert_reads_expand.py",
    "test_kernel_choices.py",
    "test_chapters_online_softmax_stages_occupancy_spmv.py",
    "test_chapters_router_groups_entropy_cope_distances.py",
    "test_routing.py",
    "test_content_positions.py",
    "test_vocab_stream.py",
    "test_train_distances.py",
    "test_confidence.py",
    "test_serving_design.py",
    "test_chapters_conversation_prefill_brownout_dp_balancer.py",
    "test_parallel_algos.py",
    "test_chapters_transpose_scan_blackwell_dualpipe.py",
    "test_quant_gemm.py",
    "test_quant_practice.py",
    "test_chapter_weight_quantization_gptq_imatrix.py",
    "test_chapters_moe_calibration_hadamard_entropy.py",
    "test_chapters_hfu_amdahl_longnet_probing.py",
    "test_chapters_burn_rate_fim_fp16_autoscaler.py",
    "test_sre.py",
    "test_cuda_model.py",
    "test_chapter_cuda_basics.py",
    "test_chapters_registers_divmod_tf32_expert_bytes.py",
    "test_block.py",
    "test_block_ffn.py",
    "test_chapter_deployment_plan_accelerators.py",
    "test_chapter_deployment_plan_pcie.py",
    "test_chapter_transformer_block_ffn.py",
    "test_chapter_transformer_block.py",
    "test_claims_fund.py",
    "test_packing.py",
    "test_chunk_positions.py",
    "test_attention_extras.py",
    "test_engine_rules.py",
    "test_chapters_vocab_trimming_cuda_graphs_cpu_rooflines.py",
    "test_fleet_ops.py",
    "test_chapters_fleet_serving_numbers.py",
    "test_gpu_kernels.py",
    "test_chapter_gpu_kernels.py",
    "test_chapter_gpu_kernels_wide_gemm.py",
    "test_chapter_gpu_kernels_wide_gemm_memory.py",
    "test_chapter_gpu_kernels_littles_law.py",
    "test_chapter_notation_widths.py",
    "test_chapter_multi_tenant_serving_cold_start.py",
    "test_chapter_tensor_parallel.py",
    "test_chapter_tensor_parallel_r27g.py",
    "test_chapter_tensor_parallel_r27s.py",
    "test_chapter_tensor_parallel_r27t.py",
    "test_chapter_tensor_parallel_r33d.py",
    "test_chapter_tensor_parallel_r36a.py",
    "test_chapter_softmax_numerics.py",
    "test_misc2.py",
    "test_misc3.py",
    "test_article_numbers.py",
    "test_attention.py",
    "test_backends.py",

    "test_attention_design.py",
    "test_benchmark_decode.py",
    "test_cache.py",
    "test_cache_debug.py",
    "test_chapter_kv_cache_basics_debug.py",
    "test_chapter_attention_backends.py",
    "test_chapter_attention_cost.py",
    "test_chapter_beyond_kv_cache.py",
    "test_chapter_beyond_kv_cache_dsa_cost.py",
    "test_chapter_beyond_kv_cache_minikv_xkv.py",
    "test_chapter_mla_serving.py",
    "test_chapter_mla_serving_expanded_cache.py",
    "test_chapter_mla_serving_r25a.py",
    "test_chapter_kv_cache_calculator.py",
    "test_chapter_serving_kv_cache.py",
    "test_chapter_chains.py",
    "test_chapter_kv_cache_basics.py",
    "test_chapter_cross_rope_claims.py",
    "test_chapter_cross_and_masked_attention.py",
    "test_chapter_tradeoffs.py",
    "test_vllm_max_model_len.py",
    "test_chapter_rope_scaling.py",
    "test_chapter_rope_scaling_critical_dimension.py",
    "test_chapter_positions.py",
    "test_chapter_scheduler_design.py",
    "test_chapter_disaggregated_serving.py",
    "test_chapter_disaggregated_serving_r33a.py",

    "test_chapter_deployment_plan.py",
    "test_chapter_map.py",
    "test_weight_quant.py",
    "test_quant2.py",
    "test_quant3.py",
    "test_normalfloat_qat_rest38.py",
    "test_chapter_weight_quantization_rest38.py",
    "test_chapter_weight_quantization_r26b.py",
    "test_chapter_weight_quantization_r27i.py",
    "test_chapter_weight_quantization_r34a.py",
    "test_engine_loop_rest38.py",
    "test_chapter_serving_operations_rest38.py",
    "test_gated_attention_rest38.py",
    "test_chapter_attention_sinks_rest38.py",
    "test_chapter_attention_sinks_differential.py",
    "test_best_of_n_rest38.py",
    "test_chapter_kv_cache_basics_rest38.py",
    "test_quantization_e4m3.py",
    "test_slo.py",
    "test_tenancy.py",
    "test_chapters_privacy_budgets_evaluation_mlx.py",
    "test_tenancy_mm_profile.py",
    "test_chapter_multi_tenant_serving.py",
    "test_chapter_multi_tenant_serving_mm_voice.py",
    "test_chapter_weight_quantization.py",
    "test_chapter_weight_quantization_kbit.py",
    "test_chapter_serving_operations.py",
    "test_chapter_tree_attention.py",

    "test_chapter_position_encodings.py",
    "test_chapter_position_encodings_r35aa.py",
    "test_chapter_why_attention.py",
    "test_chapter_why_several_heads.py",
    "test_chapter_why_attention_derivations.py",
    "test_chapter_why_several_heads_noisy_keys.py",
    "test_chapter_why_several_heads_r27p.py",
    "test_chapter_positions_sinusoidal_unique.py",
    "test_chapter_positions_rotation.py",
    "test_chapter_positions_sinusoidal_dot.py",
    "test_chapter_positions_r27o.py",
    "test_chapter_positions_r27za.py",
    "test_chapter_positions_r27zc.py",
    "test_chapter_common_mistakes_scale_one_over_d.py",
    "test_chapter_common_mistakes_uniform_attention.py",
    "test_chapter_cross_and_masked_attention_no_mask.py",
    "test_chapter_cross_and_masked_attention_r27k.py",
    "test_chapter_cross_and_masked_attention_r27z.py",
    "test_chapter_cross_and_masked_attention_r32e.py",
    "test_chapter_cross_and_masked_attention_r34h.py",
    "test_chapter_state_space_models_bilinear.py",
    "test_chapter_state_space_models_gbt_convention.py",

    "test_chapter_long_context_structure.py",
    "test_chapter_long_context_structure_r25d.py",
    "test_chapter_long_context_structure_r27zd.py",
    "test_chapter_long_context_structure_r32g.py",
    "test_chapter_state_space_models.py",
    "test_chapter_state_space_models_delta_online.py",
    "test_chapter_speculative_decoding.py",
    "test_chapter_speculative_decoding_break_even_goodput.py",
    "test_chapter_speculative_decoding_r24b.py",
    "test_chapter_speculative_decoding_r26e.py",
    "test_chapter_speculative_decoding_r27f.py",
    "test_chapter_speculative_decoding_r32a.py",
    "test_chapter_speculative_decoding_r34d.py",
    "test_chapter_follow_up_questions_r27y.py",
    "test_chapters_read_records.py",
    "test_chapters_rope_sinks.py",
    "test_chapters_serving_heads.py",
    "test_claims_a.py",
    "test_claims_b.py",
    "test_claims_c.py",
    "test_config.py",
    "test_counting.py",
    "test_counting_decode_streamed.py",
    "test_disaggregation.py",
    "test_eviction.py",
    "test_kv_compress.py",
    "test_flash.py",
    "test_attention_backward.py",
    "test_chapter_attention_cost_training_profile.py",
    "test_generation.py",
    "test_grading_expect.py",
    "test_gpu_math.py",
    "test_hardware.py",
    "test_heads.py",
    "test_hybrid.py",
    "test_hybrid_ssm38.py",
    "test_judge_watch.py",
    "test_kernels.py",
    "test_latent.py",
    "test_layers.py",
    "test_grade_task.py",
    "test_sandbox_kernel.py",
    "test_learner_edition_code.py",
    "test_linear_attention.py",
    "test_long_context_eval.py",
    "test_masks.py",
    "test_mla_cost.py",
    "test_nbval_kernels.py",
    "test_notebooks_contain_article_figures.py",
    "test_chapter_corrections35.py",
    "test_moe.py",
    "test_moe_routing.py",
    "test_moe3.py",
    "test_moe_topk.py",
    "test_sparse_select.py",
    "test_chapter_collectives_ulysses_mrope.py",
    "test_chapters_lm_head_stages_self_score_rint.py",
    "test_numerics.py",
    "test_parallel.py",
    "test_collectives.py",
    "test_serving_scale38.py",
    "test_chapters_scale38.py",
    "test_deployment.py",
    "test_pipeline.py",
    "test_offline_site.py",
    "test_website.py",
    "test_bibtex_plugins.py",
    "test_packaging.py",
    "test_plots.py",
    "test_plots_context.py",
    "test_plots_cost.py",
    "test_plots_decode.py",
    "test_plots_family.py",
    "test_plots_positions.py",
    "test_plots_scale.py",
    "test_plots_serving.py",
    "test_plots_sparse.py",
    "test_positions.py",
    "test_positions_pos38.py",
    "test_position_family.py",

    "test_policy.py",
    "test_reliability.py",
    "test_task_tail.py",
    "test_overflow.py",
    "test_chapter_multi_tenant_serving_overflow.py",
    "test_chapter_serving_reliability_task_tail.py",
    "test_admission.py",
    "test_chapter_serving_reliability_queue.py",
    "test_chapter_serving_reliability_r26f.py",
    "test_chapter_serving_reliability_r27zb.py",
    "test_chapter_outputs.py",
    "test_chapter_serving_operations_cotenant.py",
    "test_chapter_scheduler_design_app_stampede.py",
    "test_chapter_scheduler_design_r27x.py",
    "test_chapter_scheduler_design_r32cc.py",
    "test_chapter_continuous_batching_r32c.py",
    "test_chapter_prefix_caching_summarise.py",
    "test_ops3.py",
    "test_chapter_serving_reliability.py",
    "test_prefix_cache.py",
    "test_prefix_cache_collisions.py",
    "test_chapter_context_parallelism.py",
    "test_chapter_prefix_caching.py",
    "test_presets.py",
    "test_quantization.py",
    "test_question_index.py",
    "test_glue_keys.py",
    "test_references.py",
    "test_rope_scaling.py",
    "test_sampling.py",
    "test_chapter_decoding_sampling.py",
    "test_chapter_decoding_sampling_r25e.py",
    "test_chapter_continuous_batching_gain.py",
    "test_chapter_attention_cost_encoder_decoder.py",
    "test_scheduling.py",
    "test_serving.py",
    "test_sinks.py",
    "test_sparse_patterns.py",
    "test_sparse_patterns_dsa_macs.py",
    "test_compressed_cache.py",
    "test_speculative.py",
    "test_speculative_jacobi_lookahead_goodput.py",
    "test_ssm.py",
    "test_ssm2.py",
    "test_stored_outputs_portable.py",
    "test_suites.py",
    "test_site_browser.py",  # the site's one build per run, shared by its modules (no build: a stand-in)
    "test_tree.py",
    "test_units.py",
    "test_grading_fp8_scales_chunked_prefill.py",  # 11's Q6 and Q7: the judge's messages, the intros, the rules
})

FULL = frozenset({
    "test_benchmark.py",  # runs the decode benchmark script
    "test_chapter_decode_benchmark_no_numba.py",  # executes the chapter with numba unimportable
    "test_course_folders.py",
    "test_exercises_book.py",
    "test_exercises_format.py",
    "test_exercises_release.py",
    "test_feedback_catalogue.py",  # runs every designed slip through the visible tests: half a minute
    "test_fused_decode.py",  # numba compiles the fused kernel: half a minute
    "test_grading_benchmark.py",  # a class of 10 through both graders of benchmarks/grading_benchmark.py
    "test_grading_carry.py",
    "test_grading_commands.py",
    "test_grading_hostile.py",
    "test_kernel_fork.py",  # starts a dozen kernels, forked and fresh
    "test_grading_pipeline.py",
    "test_grading_records.py",  # the instructor's gradebook after a batch killed while adding the assignment
    "test_grading_rebuild_once.py",  # counts the rebuilds of a graded submission
    "test_grading_honest_answers_robust_grader.py",
    "test_grading_similarity.py",

    "test_grading_old_copy_setup_cell.py",  # check on a copy whose setup cell fails (an old release's import)
    "test_grading_slips.py",  # issue 36: each slip written into a notebook, read back from check and selfgrade
    "test_grading_scores_a.py",
    "test_grading_scores_b.py",
    "test_grading_scores_c.py",
    "test_grading_scores_d.py",
    "test_grading_timeout.py",
    "test_judge.py",
    "test_judge_v2.py",
    "test_lab.py",
    "test_graded_kit.py",
    "test_lite.py",  # the browser edition's parts: reads .venv-lite, one trial run of two chapters
    "test_safegrade.py",
    "test_safegrade_budget.py",
    "test_safegrade_discover.py",
    "test_safegrade_limits_only.py",
    "test_safegrade_nbgrader.py",
    "test_safegrade_pool.py",
    "test_safegrade_resume.py",
    "test_safegrade_rebuild.py",
    "test_safegrade_shards.py",
    "test_site.py",  # the site build (tests/site_browser.py, shared by the four) and its practice pages in the browser
    "test_site_lite.py",  # the browser edition: the exercises judged, every exercise and chapter run in the page
    "test_site_pages_a.py",  # the page reports (tests/site_pages.py), half the pages
    "test_site_pages_b.py",  # the page reports, the other half
    "test_site_tools.py",  # Sphinx builds of small sites
})


#: The slowest test modules and notebooks of `make test`, longest first. tests/conftest.py puts them first in
#: the collection and the Makefile keeps that order for pytest-xdist (--no-loadscope-reorder), so the longest
#: work starts first and no long module starts last while the other worker waits; xdist's own order (most
#: tests first) started the site tests last.
#: Measured 2026-12-06: CPU-seconds (user + system of every process, graded kernels included: they run in
#: bwrap and escape /usr/bin/time, so a cpuacct cgroup counted them) of each file run alone in its own pytest
#: process (about 1-3 of them pytest's start-up), on 2 cores shared with other jobs, PYTHONDONTWRITEBYTECODE=1.
#: The site module's figure is with the chapters' stored outputs, as in make test (nbval checks them).
LONGEST_FIRST = (
    # The site's four modules share one build (tests/site_browser.py): the first to ask builds it, the others wait
    # without using the CPU. So two of them go first, each beside a long grading module that keeps the second core
    # busy during the build, and the other two right after. Before 2026-12-06 (second session) they were one module,
    # whose 254 CPU-seconds in a row (build 35, page reports 95, other pages 20, browser edition 100) were the
    # run's long pole: 8:30 of its 10:13 in CI.
    # The other two wait behind two more grading modules: when they came right after, the workers that took them
    # waited for the build beside it, one core idle for about 25 seconds (vmstat, fresh-clone CI, 2026-12-06).
    "tests/test_site_pages_a.py",  # page reports, half the pages: about 65 (2026-12-06)
    "tests/test_safegrade.py",  # 41
    "tests/test_site_pages_b.py",  # the other half
    "tests/test_grading_scores_d.py",  # 37 (29 submissions graded)
    "tests/test_grading_benchmark.py",  # 16 (both graders on a class of 4)
    "book/instructor_guide.ipynb",  # 32 (nbgrader commands, autograde and safegrade of a class)
    "tests/test_site_lite.py",  # the browser edition: its exercises and every chapter in one kernel, about 60
    "tests/test_site.py",  # the calculator, planner, drills, flashcards, search from disk, leaks: about 25
    "tests/test_grading_scores_a.py",  # 31 (26 submissions)
    "tests/test_grading_hostile.py",  # 28
    "tests/test_grading_scores_c.py",  # 28 (25 submissions)
    "tests/test_grading_scores_b.py",  # 21 (17 submissions)
    "tests/test_grading_similarity.py",  # 18: a safegrade class with the similarity pass
    "tests/test_grading_honest_answers_robust_grader.py",  # 16
    "tests/test_exercises_release.py",  # 16
    "tests/test_grading_carry.py",  # 15
    "tests/test_safegrade_resume.py",  # 15
    "tests/test_safegrade_nbgrader.py",  # 15
    "tests/test_safegrade_shards.py",  # 14
    "tests/test_lab.py",  # 14
    "tests/test_grading_commands.py",  # 14
    "tests/test_benchmark.py",  # 13
    "tests/test_grading_pipeline.py",  # 12
    "book/exercises.ipynb",  # 12
    "tests/test_lite.py",  # 10
    "tests/test_grading_slips.py",  # 9
    "tests/test_safegrade_budget.py",  # 9
    "book/decode_benchmark.ipynb",  # 9
    "tests/test_safegrade_limits_only.py",  # 8
    "tests/test_grading_timeout.py",  # 7 (waits out two 5 s cell limits)
    "tests/test_site_tools.py",  # 6
    "book/scheduler_design.ipynb",  # 6
    "tests/test_grading_rebuild_once.py",  # 6
    "tests/test_graded_kit.py",  # 6
)


if __name__ == "__main__":  # the file lists (the Makefile names the folder with --suite unit / --suite full: tests/conftest.py)
    import sys

    if sys.argv[1:] not in ([], ["full"]):
        sys.exit(f"usage: python tests/suites.py [full] (UNIT's modules, or FULL's with 'full'), not {sys.argv[1:]}")
    print(" ".join(f"tests/{name}" for name in sorted(FULL if sys.argv[1:] else UNIT)))
