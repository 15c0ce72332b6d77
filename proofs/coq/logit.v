(** * The logit primitive (SPEC §3.1).

    Counterpart of the sympy proof [proofs.logit.prove_logit_primitive].

    For a query token b and a = b + u, the two-token sequence X = [a; b] gives
        f(X) = vᵀb + σ(uᵀWb)·vᵀu,
    and wherever vᵀu ≠ 0,
        uᵀWb = σ⁻¹((f(X) − vᵀb) / vᵀu).
    Stated for every dimension d, every W, v, u, b. *)

From Coq Require Import Reals Lra List.
Import ListNotations.
From ExactAttention Require Import Defs.
Open Scope R_scope.

Theorem logit_primitive : forall (d : nat) (W : mat) (v b u : vec),
  attn d W v [vadd b u; b] = dot d v b + sigmoid (bil d u W b) * dot d v u.
Proof.
  intros d W v b u.
  unfold attn, score, query; cbn [map lsum last].
  rewrite bil_add_l, exp_plus, dot_add_r.
  unfold sigmoid; rewrite exp_Ropp.
  set (E := exp (bil d b W b)); set (L := exp (bil d u W b)).
  assert (0 < E) by apply exp_pos; assert (0 < L) by apply exp_pos.
  assert (0 < E * L) by (apply Rmult_lt_0_compat; assumption).
  field; repeat split; lra.
Qed.

Theorem logit_inverse : forall (d : nat) (W : mat) (v b u : vec),
  dot d v u <> 0 ->
  bil d u W b = logit ((attn d W v [vadd b u; b] - dot d v b) / dot d v u).
Proof.
  intros d W v b u Hvu.
  rewrite logit_primitive.
  replace ((dot d v b + sigmoid (bil d u W b) * dot d v u - dot d v b) / dot d v u)
    with (sigmoid (bil d u W b)) by (field; assumption).
  symmetry; apply logit_sigmoid.
Qed.
