(** * The one-layer Transformer reduces to a single head and an FFN (SPEC §1.4, §3.5).

    Counterpart of the sympy proof [proofs.transformer.prove_transformer_odd_part].

    T(X) = wᵀ ReLU(A h(X)) with A ∈ ℝ^{m×d}, w ∈ ℝ^m and h the attention output of
    [oddness].  Since h is odd and ReLU(z) − ReLU(−z) = z,
        T(X) − T(−X) = (Aᵀw)ᵀ h(X),
    a single-head regressor with the same W and value vector Aᵀw; and on one token,
    T([x]) = wᵀ ReLU(A x), the FFN.  Proved for every d, m, W, A, w and X. *)

From Coq Require Import Reals Lra List.
Import ListNotations.
From ExactAttention Require Import Defs oddness.
Open Scope R_scope.

Definition relu (z : R) : R := Rmax 0 z.

(** wᵀ ReLU(A x) for A ∈ ℝ^{m×d}. *)
Definition ffn (d m : nat) (A : mat) (w : vec) (x : vec) : R :=
  sumn m (fun i => w i * relu (sumn d (fun j => A i j * x j))).

Definition transformer (d m : nat) (A : mat) (w : vec) (W : mat) (X : list vec) : R :=
  ffn d m A w (hvec d W X).

(** Aᵀw. *)
Definition At_w (d m : nat) (A : mat) (w : vec) : vec := fun j => sumn m (fun i => A i j * w i).

Lemma relu_odd_part : forall z, relu z - relu (- z) = z.
Proof. intros z; unfold relu, Rmax; destruct (Rle_dec 0 z), (Rle_dec 0 (- z)); lra. Qed.

Theorem transformer_odd_part : forall (d m : nat) (A : mat) (w : vec) (W : mat) (X : list vec),
  transformer d m A w W X - transformer d m A w W (neg_seq X) = dot d (At_w d m A w) (hvec d W X).
Proof.
  intros d m A w W X; unfold transformer, ffn.
  rewrite (sumn_ext m (fun i => w i * relu (sumn d (fun j => A i j * hvec d W (neg_seq X) j)))
                      (fun i => w i * relu (- sumn d (fun j => A i j * hvec d W X j)))).
  - unfold Rminus; rewrite <- sumn_opp, <- sumn_plus.
    rewrite (sumn_ext m _ (fun i => w i * sumn d (fun j => A i j * hvec d W X j))).
    + unfold dot, At_w.
      rewrite (sumn_ext m _ (fun i => sumn d (fun j => A i j * w i * hvec d W X j)))
        by (intros; rewrite <- sumn_scal_l; apply sumn_ext; intros; ring).
      rewrite sumn_swap; apply sumn_ext; intros j _.
      rewrite Rmult_comm, <- sumn_scal_l; apply sumn_ext; intros; ring.
    + intros i _; set (S := sumn d (fun j => A i j * hvec d W X j)).
      transitivity (w i * (relu S - relu (- S))); [ring|rewrite relu_odd_part; reflexivity].
  - intros i _; rewrite <- sumn_opp; f_equal; f_equal; apply sumn_ext; intros j _.
    rewrite attention_odd; ring.
Qed.

(** On one token α = 1, so the Transformer is the FFN. *)
Lemma hvec_one_token : forall d W x j, hvec d W [x] j = x j.
Proof. intros; unfold hvec; cbn [map lsum]; pose proof (exp_pos (score d W [x] x)); field; lra. Qed.

Theorem transformer_one_token : forall (d m : nat) (A : mat) (w : vec) (W : mat) (x : vec),
  transformer d m A w W [x] = ffn d m A w x.
Proof.
  intros; unfold transformer, ffn; apply sumn_ext; intros i _; do 2 f_equal.
  apply sumn_ext; intros; rewrite hvec_one_token; reflexivity.
Qed.

(** The odd part is the single head (W, Aᵀw). *)
Theorem transformer_odd_part_is_a_head : forall (d m : nat) (A : mat) (w : vec) (W : mat) (X : list vec),
  transformer d m A w W X - transformer d m A w W (neg_seq X) = attn d W (At_w d m A w) X.
Proof. intros; rewrite transformer_odd_part; apply hvec_readout. Qed.
