(** * Lemma A.1: the clipped σ⁻¹ is 5-Lipschitz (SPEC §3.4, §3.9).

    Counterpart of the sympy/arb proof [proofs.lemma_a1.prove_lemma_a1], and of the
    constant [exact.learn.noisy.LIPSCHITZ_HALF] = 2 + 2·cosh(1/2) the noisy learner uses.

    Let ℓ = σ(−1/2) and I = [ℓ, 1 − ℓ].  Clipping to I and then applying σ⁻¹ is Lipschitz
    with constant L = 1/(ℓ(1 − ℓ)) = e^{1/2} + 2 + e^{−1/2} = 2 + 2·cosh(1/2) ≈ 4.26 < 5.
    The constant 4 is refuted: σ⁻¹ has slope above 4 everywhere on I except at 1/2. *)

From Coq Require Import Reals Lra.
From ExactAttention Require Import Defs.
Open Scope R_scope.

Definition l_low : R := sigmoid (- (1 / 2)).

(** Clip to [ℓ, 1 − ℓ]. *)
Definition clip (a : R) : R := Rmax l_low (Rmin a (1 - l_low)).

(** The constant the noisy learner uses: 2 + 2·cosh(1/2) = e^{1/2} + 2 + e^{−1/2}. *)
Definition L_const : R := 2 + 2 * cosh (1 / 2).

Lemma exp_half_bounds : 1 < exp (1 / 2) < 2.
Proof.
  split.
  - pose proof (exp_ineq1 (1 / 2)); lra.
  - assert (E : exp (1 / 2) * exp (1 / 2) = exp 1) by (rewrite <- exp_plus; f_equal; lra).
    pose proof exp_le_3; pose proof (exp_pos (1 / 2)); nra.
Qed.

Lemma l_low_value : l_low = 1 / (1 + exp (1 / 2)).
Proof. unfold l_low, sigmoid; do 3 f_equal; ring. Qed.

Lemma l_low_bounds : 0 < l_low < 1 / 2.
Proof.
  rewrite l_low_value; pose proof exp_half_bounds; split.
  - apply Rdiv_lt_0_compat; lra.
  - apply (Rmult_lt_reg_r (1 + exp (1 / 2))); [lra|]; field_simplify; lra.
Qed.

(** L = 1/(ℓ(1 − ℓ)) is exactly the learner's constant, and it is below 5. *)
Lemma L_const_value : L_const = 1 / (l_low * (1 - l_low)).
Proof.
  unfold L_const, cosh; rewrite l_low_value, exp_Ropp; pose proof (exp_pos (1 / 2)); field; lra.
Qed.

Lemma L_const_lt_5 : L_const < 5.
Proof.
  unfold L_const, cosh; rewrite exp_Ropp; pose proof exp_half_bounds.
  set (y := exp (1 / 2)) in *.
  apply (Rmult_lt_reg_r y); [lra|]; field_simplify; [|lra].
  nra.
Qed.

(** The derivative of σ⁻¹ on (0, 1) is 1/(c(1 − c)). *)
Lemma logit_derivative : forall c, 0 < c < 1 -> derivable_pt_lim logit c (/ (c * (1 - c))).
Proof.
  intros c Hc.
  assert (Hne : minus_fct (fct_cte 1) id c <> 0) by (unfold minus_fct, fct_cte, id; lra).
  pose proof (derivable_pt_lim_div id (minus_fct (fct_cte 1) id) c 1 (0 - 1) (derivable_pt_lim_id c)
               (derivable_pt_lim_minus _ _ c 0 1 (derivable_pt_lim_const 1 c) (derivable_pt_lim_id c)) Hne) as Hq.
  assert (Hl : derivable_pt_lim ln (div_fct id (minus_fct (fct_cte 1) id) c) (/ (c / (1 - c)))).
  { apply derivable_pt_lim_ln; unfold div_fct, minus_fct, fct_cte, id; apply Rdiv_lt_0_compat; lra. }
  pose proof (derivable_pt_lim_comp _ _ c _ _ Hq Hl) as H.
  unfold comp, div_fct, minus_fct, fct_cte, id, Rsqr in H.
  replace (/ (c * (1 - c))) with (/ (c / (1 - c)) * ((1 * (1 - c) - (0 - 1) * c) / ((1 - c) * (1 - c))))
    by (field; lra).
  exact H.
Qed.

(** On I, c(1 − c) ≥ ℓ(1 − ℓ): c(1 − c) − ℓ(1 − ℓ) = (c − ℓ)(1 − c − ℓ). *)
Lemma slope_bound : forall c, l_low <= c <= 1 - l_low -> / (c * (1 - c)) <= L_const.
Proof.
  intros c Hc; pose proof l_low_bounds; rewrite L_const_value.
  assert (0 < l_low * (1 - l_low)) by nra.
  assert (l_low * (1 - l_low) <= c * (1 - c)) by nra.
  unfold Rdiv; rewrite Rmult_1_l; apply Rinv_le_contravar; assumption.
Qed.

(** σ⁻¹ is L-Lipschitz on I. *)
Lemma logit_lipschitz_on_I : forall x y, l_low <= x <= 1 - l_low -> l_low <= y <= 1 - l_low ->
  Rabs (logit x - logit y) <= L_const * Rabs (x - y).
Proof.
  assert (Main : forall x y, l_low <= x <= 1 - l_low -> l_low <= y <= 1 - l_low -> x < y ->
            Rabs (logit x - logit y) <= L_const * Rabs (x - y)).
  { intros x y Hx Hy Hxy; pose proof l_low_bounds.
    destruct (MVT_cor2 logit (fun c => / (c * (1 - c))) x y Hxy) as [c [Hmvt Hc]].
    - intros c Hc; apply logit_derivative; lra.
    - rewrite Rabs_minus_sym, Hmvt, (Rabs_minus_sym x y).
      assert (0 < / (c * (1 - c))) by (apply Rinv_0_lt_compat; nra).
      rewrite Rabs_mult, Rabs_pos_eq, (Rabs_pos_eq (y - x)) by lra.
      apply Rmult_le_compat_r; [lra|]; apply slope_bound; lra. }
  intros x y Hx Hy; destruct (Rtotal_order x y) as [Hlt|[Heq|Hgt]].
  - apply Main; assumption.
  - subst; unfold Rminus; rewrite !Rplus_opp_r, Rabs_R0; lra.
  - rewrite Rabs_minus_sym, (Rabs_minus_sym x y); apply Main; assumption.
Qed.

Lemma clip_in_I : forall a, l_low <= clip a <= 1 - l_low.
Proof.
  intros a; pose proof l_low_bounds; unfold clip, Rmax, Rmin.
  destruct (Rle_dec a (1 - l_low)), (Rle_dec l_low a), (Rle_dec l_low (1 - l_low)); lra.
Qed.

Lemma clip_contraction : forall a b, Rabs (clip a - clip b) <= Rabs (a - b).
Proof.
  intros a b; pose proof l_low_bounds.
  pose proof (Rle_abs (a - b)); pose proof (Rle_abs (b - a)); rewrite Rabs_minus_sym in H1.
  apply Rabs_le; unfold clip, Rmax, Rmin.
  destruct (Rle_dec a (1 - l_low)), (Rle_dec b (1 - l_low));
    destruct (Rle_dec l_low a), (Rle_dec l_low b), (Rle_dec l_low (1 - l_low)); lra.
Qed.

(** Lemma A.1 with the learner's constant, and with the paper's constant 5. *)
Theorem lemma_a1_constant : forall a b, Rabs (logit (clip a) - logit (clip b)) <= L_const * Rabs (a - b).
Proof.
  intros a b; pose proof (clip_contraction a b); pose proof l_low_bounds.
  assert (0 <= L_const) by (rewrite L_const_value; unfold Rdiv; rewrite Rmult_1_l;
                            apply Rlt_le, Rinv_0_lt_compat; nra).
  eapply Rle_trans; [apply logit_lipschitz_on_I; apply clip_in_I|].
  apply Rmult_le_compat_l; assumption.
Qed.

Theorem lemma_a1 : forall a b, Rabs (logit (clip a) - logit (clip b)) <= 5 * Rabs (a - b).
Proof.
  intros a b; eapply Rle_trans; [apply lemma_a1_constant|].
  apply Rmult_le_compat_r; [apply Rabs_pos|]; pose proof L_const_lt_5; lra.
Qed.

(** The constant 4 is false: between ℓ and 1/2 the slope 1/(c(1 − c)) exceeds 4. *)
Theorem lemma_a1_not_4 : ~ (forall a b, Rabs (logit (clip a) - logit (clip b)) <= 4 * Rabs (a - b)).
Proof.
  intros H; pose proof l_low_bounds.
  assert (Hc : forall x, l_low <= x <= 1 - l_low -> clip x = x).
  { intros x Hx; unfold clip, Rmax, Rmin.
    destruct (Rle_dec x (1 - l_low)), (Rle_dec l_low x); lra. }
  specialize (H l_low (1 / 2)); rewrite !Hc in H by lra.
  destruct (MVT_cor2 logit (fun c => / (c * (1 - c))) l_low (1 / 2)) as [c [Hmvt Hcr]]; [lra| |].
  - intros c Hcr; apply logit_derivative; lra.
  - rewrite Rabs_minus_sym, Hmvt, (Rabs_minus_sym l_low) in H.
    assert (Hcc : 0 < c * (1 - c) < 1 / 4) by nra.
    assert (4 < / (c * (1 - c))).
    { apply (Rmult_lt_reg_r (c * (1 - c))); [lra|]; rewrite Rinv_l by lra; lra. }
    rewrite Rabs_mult, !Rabs_pos_eq in H by lra.
    assert (0 < 1 / 2 - l_low) by lra; nra.
Qed.
